-- :PiContext: the linear context pi would send, as pretty JSON in a scratch buffer.
local client = require("pi_sessions.client")
local tree = require("pi_sessions.tree")
local util = require("pi_sessions.util")

local M = {}

M.FORMATS = { "agent", "llm", "anthropic", "openai" }
M.KEY_ORDER = { "messages", "leafId", "model", "thinkingLevel", "tokens", "system", "entryIds", "request" }

--- The session to act on: the sidebar's, else the current .jsonl buffer's.
function M.current_session()
  local s = tree.session()
  if s then
    return s
  end
  local name = vim.api.nvim_buf_get_name(0)
  if name:match("%.jsonl$") then
    return require("pi_sessions.names").session(name)
  end
end

function M.open(format)
  format = (format and format ~= "") and format or require("pi_sessions.config").options.context_format or "agent"
  if not vim.tbl_contains(M.FORMATS, format) then
    return client.notify_error("unknown format " .. format .. " (agent, llm, anthropic, openai)")
  end
  local session = M.current_session()
  if not session then
    return client.notify_error("no session: open one with :PiSessions or :PiTree first")
  end
  local params = { session = session, format = format }
  -- in the sidebar, the entry under the cursor; elsewhere the current leaf
  if vim.api.nvim_get_current_buf() == tree.state.buf then
    local row = tree.current_row()
    if row then
      params.leafId = row.id
    end
  end
  client.request("pi/buildContext", params, function(err, result)
    if err then
      return
    end
    if tree.win() == vim.api.nvim_get_current_win() then
      vim.cmd("wincmd p")
    end
    -- the messages first: entryIds (one per message) would push them hundreds of lines down
    local lines = vim.split(util.json(result, nil, M.KEY_ORDER), "\n", { plain = true })
    M.last_buf = util.scratch(lines, "json", ("pi-context://%s/%s/%s"):format(require("pi_sessions.names").display_name(session, nil, true), result.leafId or "root", format))
  end)
end

return M
