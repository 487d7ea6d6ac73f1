-- Context edits and the system prompt from the sidebar, keys pressed as a
-- user would: o / O write pi's context_edit entries, S shows the system
-- prompt and tools; checked against the file and the server's context.
local H = require("helpers")
local tree = require("pi_sessions.tree")
local edits = require("pi_sessions.tree.edits")

local PI16 = "/../../tests/fixtures/pi16/"

--- Copy a pi 1.6.0 fixture into the sessions folder; returns its path.
local function pi16(name, stem)
  local dir = H.sessions .. "/--home-dev-demo-project--"
  vim.fn.mkdir(dir, "p")
  local dest = dir .. "/" .. stem .. ".jsonl"
  local src = vim.fs.normalize(H.plugin_dir .. PI16 .. name)
  vim.fn.writefile(vim.fn.readfile(src, "b"), dest, "b")
  return dest
end

--- The mark drawn at the end of the row's line ("" when none).
local function mark_of(id)
  local S = tree.state
  for i, row in pairs(S.rows) do
    if row.id == id then
      local line = i + 1
      local marks = vim.api.nvim_buf_get_extmarks(S.buf, edits.ns, { line, 0 }, { line, -1 }, { details = true })
      local m = marks[1]
      return m and m[4].virt_text[1][1] or ""
    end
  end
  error("row " .. id .. " is not loaded")
end

local function context_ids(file)
  return H.request("pi/buildContext", { session = file }).entryIds
end

return {
  { "o omits the message under the cursor (a context_edit), O restores it as written", function()
    local file = H.shop()
    H.open(file)
    local in_ctx = context_ids(file)
    local row = H.truthy(H.row_where(function(r)
      return r.role == "user" and vim.tbl_contains(in_ctx, r.id)
    end), "a user message in the context")
    H.cursor_to(row.id)
    H.press("o")
    H.wait(function() return H.last_entry(file).type == "context_edit" end, "the edit in the file")
    local edit = H.last_entry(file)
    H.eq(row.id, edit.targetId)
    H.eq(nil, edit.replacement)
    H.truthy(vim.fn.readfile(file)[#vim.fn.readfile(file)]:find('"replacement":null', 1, true), "replacement: null")
    H.truthy(not vim.tbl_contains(context_ids(file), row.id), "left out of the context")
    H.wait(function() return tree.state.leaf_id == edit.id and tree.is_idle() end, "the sidebar on the new leaf")
    H.wait(function() return mark_of(row.id) == "⊘ omitted" end, "the omitted mark")
    H.eq(H.cli_tree(file), H.lines(), "the lines stay as the CLI draws them (the mark is virtual text)")

    H.cursor_to(row.id)
    H.press("O")
    H.wait(function() return H.last_entry(file).id ~= edit.id end, "the restore in the file")
    local restore = H.last_entry(file)
    H.eq("context_edit", restore.type)
    H.eq(row.id, restore.targetId)
    local entry = H.request("pi/getEntry", { session = file, id = row.id }).entry
    H.eq(entry.message.content, restore.replacement.content, "the replacement is the original content")
    local ctx = H.request("pi/buildContext", { session = file })
    local at = H.truthy(vim.fn.index(ctx.entryIds, row.id), "back in the context") + 1
    H.truthy(at > 0, "back in the context")
    H.eq(entry.message.content, ctx.messages[at].content)
    H.wait(function() return tree.state.leaf_id == restore.id and tree.is_idle() end, "the sidebar on the new leaf")
    H.wait(function() return mark_of(row.id) == "" end, "no mark after the restore")
    H.eq({}, H.errors())
  end },
  { "o on a message off the active path: the server's reason, nothing written", function()
    local file = H.shop()
    H.open(file)
    local row = H.truthy(H.row_where(function(r) return r.role == "assistant" and not r.onActivePath end), "an off-path row")
    local size = vim.fn.getfsize(file)
    H.cursor_to(row.id)
    H.press("o")
    H.wait(function() return #H.errors() > 0 end, "an error message")
    local _, err = require("pi_sessions.client").request_sync("pi/editContext", { session = file, targetId = row.id, replacement = vim.NIL }, 15000)
    local reason = type(err) == "table" and err.message or tostring(err)
    H.truthy(H.errors()[1]:find(reason, 1, true), ("the server's reason %q in %q"):format(reason, H.errors()[1]))
    H.eq(size, vim.fn.getfsize(file), "nothing written")
  end },
  { "a pi 1.6.0 session's own edits are marked on their rows", function()
    local file = pi16("02-context-edits.jsonl", "2026-11-21T11-00-00-000Z_01a1fd90-d760-7b3f-ac90-d6b67d447efb")
    H.request("pi/switchBranch", { session = file, targetId = "cb846a44" })
    H.open(file)
    H.wait(function() return mark_of("e3045239") == "⊘ omitted" end, "the omitted custom message")
    H.eq("✎ replaced", mark_of("940eeff8"), "the redacted user message")
    H.eq("", mark_of("abb5d6eb"), "an unedited message")
  end },
  { "S shows the system prompt and tools at the entry in a markdown scratch buffer; :PiSystem too", function()
    local system = require("pi_sessions.system")
    local file = pi16("01-agent-session.jsonl", "2026-11-21T10-00-00-000Z_01a1fd8c-6900-734d-9d07-9d045896025b")
    H.open(file)
    local row = H.cursor_row()
    system.last_buf = nil
    H.press("S")
    H.wait(function() return system.last_buf ~= nil end, "the scratch buffer")
    local buf = system.last_buf
    H.eq("markdown", vim.bo[buf].filetype)
    H.eq(buf, vim.api.nvim_get_current_buf(), "the buffer is shown")
    local ctx = H.request("pi/buildContext", { session = file, leafId = row.id, format = "llm" })
    local lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
    H.eq(system.lines(ctx), lines)
    local text = table.concat(lines, "\n")
    H.truthy(text:find(ctx.system.text, 1, true), "the prompt verbatim")
    H.truthy(text:find(("## Tools (%d)"):format(#ctx.system.tools), 1, true), "the tool count")
    for _, t in ipairs(ctx.system.tools) do
      H.truthy(text:find("### " .. t.name .. "\n\n" .. t.description, 1, true), t.name)
    end
    H.eq(false, vim.bo[buf].modifiable)
    -- elsewhere than the sidebar: the session's leaf; a pi 0.73 file has no system prompt
    vim.cmd("close")
    vim.cmd("wincmd p")
    H.open(H.shop())
    vim.cmd("wincmd p")
    system.last_buf = nil
    vim.cmd("PiSystem")
    H.wait(function() return system.last_buf ~= nil end, "the scratch buffer")
    local shop_lines = vim.api.nvim_buf_get_lines(system.last_buf, 0, -1, false)
    H.truthy(table.concat(shop_lines, "\n"):find("No system prompt is recorded on this path", 1, true), table.concat(shop_lines, "\n"))
  end },
}
