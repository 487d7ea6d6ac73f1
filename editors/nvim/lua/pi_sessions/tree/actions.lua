-- Everything a key in the sidebar can do, one named action each (as
-- aerial.nvim's actions.lua): `desc` says what it does (shown by :map and
-- which-key), `row = true` means it acts on the row under the cursor, and
-- `callback(sb, row)` does it. keymaps.lua maps keys to these names.
local config = require("pi_sessions.config")
local paging = require("pi_sessions.tree.paging")
local window = require("pi_sessions.tree.window")
local util = require("pi_sessions.util")

local M = {}

local SWITCH_CHOICES = {
  { key = "plain", text = "Switch (no summary)" },
  { key = "summary", text = "Switch and summarize the abandoned branch" },
  { key = "instructions", text = "Switch and summarize with instructions…" },
  { key = "fork", text = "Fork into a new session from here" },
}

local function after_switch(sb, result)
  local msg = "leaf is now " .. tostring(result.leafId)
  if result.summaryEntryId then
    msg = msg .. ", summary " .. result.summaryEntryId
  end
  if result.queued then
    msg = msg .. " (queued until pi's turn ends)"
  end
  if result.editorText and result.editorText ~= "" then
    util.set_register(result.editorText)
    sb.last_editor_text = result.editorText
    msg = msg .. '; the message text is in register " — paste it into pi to edit and resubmit'
  end
  util.info(msg)
  paging.refresh(sb, { focus = "leaf" })
end

local function fork(sb, leaf_id)
  sb:request("pi/fork", { session = sb.session, leafId = leaf_id }, function(err, result)
    if err then
      return
    end
    local names = require("pi_sessions.names")
    util.info("forked into " .. names.display_name(result.session))
    paging.show(sb, names.session(result.session))
  end)
end

-- Ask for the summary instructions when the choice wants them, then switch.
local function switch_with(sb, row, choice)
  local params = { session = sb.session, targetId = row.id }
  local function go()
    sb:request("pi/switchBranch", params, function(err, result)
      if not err then
        after_switch(sb, result)
      end
    end)
  end
  if choice == "plain" then
    return go()
  end
  params.summarize = true
  if choice == "summary" then
    return go()
  end
  vim.ui.input({ prompt = "Summary instructions: " }, function(text)
    if text == nil then
      return
    end
    if text ~= "" then
      params.customInstructions = text
    end
    go()
  end)
end

M.switch = {
  desc = "Switch to this entry (with or without a summary) or fork from it",
  row = true,
  callback = function(sb, row)
    vim.ui.select(SWITCH_CHOICES, {
      prompt = "Switch to " .. row.title:sub(1, 60),
      format_item = function(c) return c.text end,
    }, function(choice)
      if not choice then
        return
      elseif choice.key == "fork" then
        return fork(sb, row.id)
      end
      switch_with(sb, row, choice.key)
    end)
  end,
}

M.summarize = {
  desc = "Summarize the branch to this entry (writes nothing)",
  row = true,
  callback = function(sb, row)
    util.info("summarizing the branch to " .. row.id .. "…")
    sb:request("pi/summarizeBranch", { session = sb.session, targetId = row.id }, function(err, result)
      if err then
        return
      end
      sb.last_summary = result
      local lines = vim.split(result.summary or "", "\n", { plain = true })
      util.float(lines, "markdown", ("branch summary (%s)"):format(result.source or "?"))
    end)
  end,
}

M.label = {
  desc = "Set or clear the entry's label",
  row = true,
  callback = function(sb, row)
    vim.ui.input({ prompt = "Label (empty clears): ", default = row.label or "" }, function(text)
      if text == nil then
        return
      end
      local params = { session = sb.session, targetId = row.id, label = vim.trim(text) }
      sb:request("pi/setLabel", params, function(err, result)
        if err then
          return
        end
        if result.queued then
          util.info("label queued until pi's turn ends")
        end
        paging.refresh(sb, { keep_id = row.id })
      end)
    end)
  end,
}

M.filter = {
  desc = "Cycle the filter: default, no-tools, user-only, labeled-only, all",
  callback = function(sb)
    local filters = config.filters
    local i = 1
    for k, f in ipairs(filters) do
      if f == sb.filter then
        i = k
      end
    end
    sb.filter = filters[i % #filters + 1]
    paging.refresh(sb)
  end,
}

M.search = {
  desc = "Search the rows (empty clears)",
  callback = function(sb)
    vim.ui.input({ prompt = "Search (empty clears): ", default = sb.search }, function(text)
      if text == nil then
        return
      end
      sb.search = vim.trim(text)
      paging.refresh(sb)
    end)
  end,
}

M.fold = {
  desc = "Fold or unfold the row's branch",
  row = true,
  callback = function(sb, row)
    if not (row.foldable or row.folded) then
      return util.info("this row has nothing to fold")
    end
    sb.folded[row.id] = (not sb.folded[row.id]) or nil
    paging.refresh(sb, { keep_id = row.id })
  end,
}

M.entry = {
  desc = "Show the entry's JSON in a float",
  row = true,
  callback = function(sb, row)
    sb:request("pi/getEntry", { session = sb.session, id = row.id }, function(err, result)
      if not err then
        util.float(vim.split(util.json(result.entry), "\n", { plain = true }), "json", "entry " .. row.id)
      end
    end)
  end,
}

M.omit = {
  desc = "Omit the entry's message from the context (a context_edit under the leaf)",
  row = true,
  callback = function(sb, row)
    -- the server refuses what pi's appendContextEdit refuses, with pi's reason
    require("pi_sessions.tree.edits").write(sb, row, vim.NIL, "omitted " .. row.id .. " from the context")
  end,
}

M.restore = {
  desc = "Restore the entry's message to the context as it was written",
  row = true,
  callback = function(sb, row)
    local edits = require("pi_sessions.tree.edits")
    sb:request("pi/getEntry", { session = sb.session, id = row.id }, function(err, result)
      if err then
        return
      end
      -- an edit whose replacement is the entry's own content: the file stays append-only
      edits.write(sb, row, { content = edits.original(result.entry) }, "restored " .. row.id .. " to the context")
    end)
  end,
}

M.system = {
  desc = "Show the system prompt and tools at this entry in a scratch buffer",
  row = true,
  callback = function(sb, row)
    require("pi_sessions.system").open(sb.session, row.id)
  end,
}

local function yank_context(sb, row, format)
  sb:request("pi/buildContext", { session = sb.session, leafId = row.id, format = format }, function(err, result)
    if err then
      return
    end
    util.set_register(util.json(result))
    util.info(("context (%s, %d messages, ~%s tokens) yanked"):format(format, #(result.messages or {}), tostring(result.tokens)))
  end)
end

M.yank = {
  desc = "Yank the context JSON up to this entry",
  row = true,
  callback = function(sb, row)
    yank_context(sb, row, config.options.context_format or "agent")
  end,
}

M.yank_format = {
  desc = "Yank the context JSON up to this entry, choosing the format",
  row = true,
  callback = function(sb, row)
    vim.ui.select({ "agent", "llm", "anthropic", "openai" }, { prompt = "Context format" }, function(format)
      if format then
        yank_context(sb, row, format)
      end
    end)
  end,
}

M.refresh = {
  desc = "Fetch the rows again",
  callback = function(sb)
    paging.refresh(sb)
  end,
}

M.close = {
  desc = "Close the sidebar",
  callback = function(sb)
    window.close(sb)
  end,
}

--- Run the action `name` on `sb` (and the row under its cursor when the
--- action needs one). Returns false when there is nothing to act on.
function M.run(name, sb, row)
  local action = M[name]
  if type(action) ~= "table" or not action.callback then
    util.info("no sidebar action named " .. tostring(name))
    return false
  end
  if action.row then
    row = row or sb:current_row()
    if not row then
      util.info("no entry under the cursor")
      return false
    end
  end
  action.callback(sb, row)
  return true
end

return M
