-- Sidebar keys that read or write through the server: labels, switches,
-- summaries, forks, entry JSON, yanked contexts.
local H = require("helpers")
local tree = require("pi_sessions.tree")

local function row_titled(prefix)
  return H.truthy(H.row_where(function(r) return r.title:sub(1, #prefix) == prefix end), "row " .. prefix)
end

local function server_row(file, id)
  local result = H.request("pi/getTree", { session = file, filter = "all" })
  for _, r in ipairs(result.rows) do
    if r.id == id then
      return r, result
    end
  end
end

return {
  { "L sets a label (written to the file) and an empty answer clears it", function()
    local file = H.shop()
    H.open(file)
    local row = row_titled("user: Run the tests.")
    H.cursor_to(row.id)
    H.answer_input("checkpoint")
    H.press("L")
    H.wait(function()
      local r = server_row(file, row.id)
      return r and r.label == "checkpoint"
    end, "label on the server")
    H.idle()
    local entries = H.read_entries(file)
    local last = entries[#entries]
    H.eq("label", last.type)
    H.eq(row.id, last.targetId)
    H.eq("checkpoint", last.label)
    H.wait(function()
      return vim.tbl_contains(H.lines(), "│     • [checkpoint] user: Run the tests.")
    end, "label drawn in the sidebar")
    H.eq(row.id, H.cursor_row().id, "cursor stays on the entry")
    H.answer_input("")
    H.press("L")
    H.wait(function()
      local r = server_row(file, row.id)
      return r and r.label == nil
    end, "label cleared")
    H.idle()
    H.eq(H.cli_tree(file), H.lines(), "lines as the CLI draws them after the label changes")
  end },
  { "<CR> on a user message: leaf moves to its parent, editorText in a register", function()
    local file = H.shop()
    H.open(file)
    local row = row_titled("user: Go with the ORM.")
    H.cursor_to(row.id)
    H.answer_select(function(item) return item.key == "plain" end)
    vim.fn.setreg('"', "")
    H.press("<CR>")
    H.wait(function() return vim.fn.getreg('"') == "Go with the ORM." end, "editorText in the unnamed register")
    H.idle()
    local result = H.request("pi/getTree", { session = file, limit = 1 })
    H.eq(row.parentId, result.leafId, "leaf = the user message's parent")
    H.eq(H.cli_tree(file, { "--leaf", result.leafId }), H.lines(), "sidebar redrawn on the new leaf")
    H.eq(result.leafId, H.cursor_row().id, "cursor on the new leaf")
  end },
  { "<CR> on an assistant message: the leaf is that entry", function()
    local file = H.shop()
    H.open(file)
    local row = row_titled("assistant: The ORM route")
    H.cursor_to(row.id)
    H.answer_select(function(item) return item.key == "plain" end)
    H.press("<CR>")
    H.wait(function()
      return H.request("pi/getTree", { session = file, limit = 1 }).leafId == row.id
    end, "leaf moved")
    H.idle()
    H.wait(function() return H.cursor_row() and H.cursor_row().id == row.id end, "cursor on the leaf")
    H.eq(H.cli_tree(file, { "--leaf", row.id }), H.lines())
  end },
  { "<CR> with a summary: a branch_summary entry under the new leaf", function()
    local file = H.shop()
    H.open(file)
    local row = row_titled("assistant: The ORM route")
    H.cursor_to(row.id)
    H.answer_select(function(item) return item.key == "instructions" end)
    H.answer_input("focus on tests")
    H.press("<CR>")
    H.wait(function()
      local entries = H.read_entries(file)
      return entries[#entries].type == "branch_summary"
    end, "summary entry written", 20000)
    local entries = H.read_entries(file)
    local summary = entries[#entries]
    H.eq(row.id, summary.parentId)
    H.wait(function()
      return H.request("pi/getTree", { session = file, limit = 1 }).leafId == summary.id
    end, "leaf on the summary")
    H.idle()
    H.eq(0, #H.errors(), table.concat(H.errors(), "\n"))
  end },
  { "<CR> fork: a new session file, opened in the sidebar", function()
    local file = H.shop()
    H.open(file)
    local row = row_titled("user: Run the tests.")
    H.cursor_to(row.id)
    H.answer_select(function(item) return item.key == "fork" end)
    H.press("<CR>")
    H.wait(function() return tree.state.session ~= vim.fs.normalize(file) end, "sidebar on the fork")
    H.idle()
    local forked = tree.state.session
    H.eq(1, vim.fn.filereadable(forked))
    local header = H.read_entries(forked)[1]
    H.eq(vim.fs.normalize(file), vim.fs.normalize(header.parentSession))
    H.eq(H.cli_tree(forked), H.lines(), "fork drawn as the CLI draws it")
  end },
  { "s shows an extractive summary in a float", function()
    local file = H.shop()
    H.open(file)
    local row = row_titled("assistant: The ORM route")
    H.cursor_to(row.id)
    local before = #H.read_entries(file)
    H.press("s")
    H.wait(function() return tree.last_summary ~= nil and vim.api.nvim_win_get_config(0).relative ~= "" end, "summary float", 20000)
    H.eq("extractive", tree.last_summary.source)
    local text = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
    H.truthy(text:find("Goal", 1, true), "summary sections shown: " .. text)
    H.eq("markdown", vim.bo.filetype)
    H.eq(before, #H.read_entries(file), "summarizeBranch writes nothing")
    H.press("q")
    vim.api.nvim_feedkeys("q", "x", false)
    tree.last_summary = nil
  end },
  { "K shows the entry JSON in a float", function()
    local file = H.shop()
    H.open(file)
    local row = row_titled("user: Run the tests.")
    H.cursor_to(row.id)
    H.press("K")
    H.wait(function() return vim.api.nvim_win_get_config(0).relative ~= "" end, "entry float")
    H.eq("json", vim.bo.filetype)
    local shown = vim.json.decode(table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n"), { luanil = { object = true } })
    H.eq(H.request("pi/getEntry", { session = file, id = row.id }).entry, shown)
    H.eq(row.id, shown.id)
  end },
  { "y yanks the context JSON equal to `pi-server context --leaf`", function()
    local file = H.shop()
    H.open(file)
    local row = row_titled("user: Run the tests.")
    H.cursor_to(row.id)
    vim.fn.setreg('"', "")
    H.press("y")
    H.wait(function() return vim.fn.getreg('"') ~= "" end, "context in the register")
    local yanked = vim.json.decode(vim.fn.getreg('"'), { luanil = { object = true } })
    local cli = vim.json.decode(H.cli({ "context", file, "--leaf", row.id }), { luanil = { object = true } })
    H.eq(cli, yanked)
    H.eq(row.id, yanked.leafId)
    -- Y picks the format
    vim.fn.setreg('"', "")
    H.answer_select(function(item) return item == "openai" end)
    H.press("Y")
    H.wait(function() return vim.fn.getreg('"') ~= "" end, "openai context in the register")
    local openai = vim.json.decode(H.cli({ "context", file, "--leaf", row.id, "--format", "openai" }), { luanil = { object = true } })
    H.eq(openai, vim.json.decode(vim.fn.getreg('"'), { luanil = { object = true } }))
  end },
  { "server errors are shown as one message, no traceback", function()
    local file = H.shop()
    H.open(file)
    tree.show_entry({ id = "nope0000", title = "x" })
    H.wait(function() return #H.errors() > 0 end, "an error message")
    local msg = H.errors()[1]
    H.truthy(msg:find("pi/getEntry", 1, true), msg)
    H.truthy(not msg:find("Traceback", 1, true) and not msg:find("stack traceback", 1, true), msg)
  end },
}
