-- :PiSystem and the sidebar's `S`: the system prompt and tool declarations in
-- force at an entry (pi/buildContext's `system`), as markdown in a scratch buffer.
local client = require("pi_sessions.client")
local util = require("pi_sessions.util")

local M = {}

--- A fence longer than any backtick run in `text`, so the text shows verbatim.
local function fence(text)
  local longest = 2
  for run in text:gmatch("`+") do
    longest = math.max(longest, #run)
  end
  return string.rep("`", longest + 1)
end

local function model_name(model)
  if type(model) == "table" then
    return table.concat(vim.tbl_filter(function(s) return s ~= nil end, { model.provider, model.modelId or model.id }), "/")
  end
  return model and model ~= vim.NIL and tostring(model) or "no model"
end

local function add(out, text)
  vim.list_extend(out, vim.split(text, "\n", { plain = true }))
end

local function fenced(out, text, lang)
  local f = fence(text)
  out[#out + 1] = f .. lang
  add(out, text)
  out[#out + 1] = f
end

--- The markdown lines for a pi/buildContext result.
function M.lines(result)
  local out = {
    "# System prompt and tools",
    "",
    ("At entry `%s` · %s · thinking %s"):format(result.leafId or "(before the first entry)", model_name(result.model), tostring(result.thinkingLevel)),
    "",
  }
  local sys = result.system
  if sys == nil or sys == vim.NIL then
    add(out, "No system prompt is recorded on this path: pi 1.6.0 writes one before a session's first message; files written by older pi have none.")
    return out
  end
  add(out, "## System prompt\n")
  fenced(out, sys.text or "", "text")
  local tools = sys.tools or {}
  add(out, ("\n## Tools (%d)"):format(#tools))
  for _, tool in ipairs(tools) do
    add(out, "\n### " .. tool.name .. "\n")
    if tool.description and tool.description ~= "" then
      add(out, tool.description .. "\n")
    end
    if tool.parameters ~= nil then
      fenced(out, util.json(tool.parameters), "json")
    end
  end
  return out
end

--- Show the system prompt and tools of `session` at `leaf_id` (nil: the
--- session's current leaf) in a scratch buffer below.
function M.open(session, leaf_id)
  local params = { session = session, format = "llm", leafId = leaf_id }
  client.request("pi/buildContext", params, function(err, result)
    if err then
      return
    end
    local tree = require("pi_sessions.tree")
    if tree.win() == vim.api.nvim_get_current_win() then
      vim.cmd("wincmd p")
    end
    local name = ("pi-system://%s/%s"):format(require("pi_sessions.names").display_name(session, nil, true), result.leafId or "root")
    M.last_buf = util.scratch(M.lines(result), "markdown", name)
  end)
end

--- :PiSystem: at the entry under the cursor in the sidebar, else the leaf of
--- the current session.
function M.command()
  local context = require("pi_sessions.context")
  local tree = require("pi_sessions.tree")
  local session = context.current_session()
  if not session then
    return client.notify_error("no session: open one with :PiSessions or :PiTree first")
  end
  local row = vim.api.nvim_get_current_buf() == tree.state.buf and tree.current_row() or nil
  M.open(session, row and row.id or nil)
end

return M
