-- Live refresh: while a sidebar is open it listens for the server saying its
-- session grew or was rewritten, and fetches the rows again (debounced, so a
-- burst of appends is one refresh).
local client = require("pi_sessions.client")
local paging = require("pi_sessions.tree.paging")
local util = require("pi_sessions.util")

local M = {}

M.DEBOUNCE_MS = 30

local function schedule_refresh(sb)
  if sb.pending_refresh then
    return
  end
  sb.pending_refresh = true
  vim.defer_fn(function()
    sb.pending_refresh = false
    paging.refresh(sb)
  end, M.DEBOUNCE_MS)
end

--- pi took, changed or let go of the session (live: a table, or vim.NIL):
--- the header says so at once; rows and a moved leaf come with the refresh.
local function mark_live(sb, live)
  sb.live = type(live) == "table" and live or nil
  require("pi_sessions.tree.draw").header(sb)
end

--- Subscribe `sb` to the server's notifications; returns the unsubscribe.
function M.watch(sb)
  local off_updated = client.on("pi/sessionUpdated", function(params)
    if sb:is_open() and util.same_path(params.session, sb.session) then
      if params.live ~= nil then
        mark_live(sb, params.live)
      end
      schedule_refresh(sb)
    end
  end)
  local off_changed = client.on("pi/sessionsChanged", function(params)
    if not sb:is_open() then
      return
    end
    for _, s in ipairs(params.removed or {}) do
      if util.same_path(s, sb.session) then
        return util.info("the session file was removed")
      end
    end
    for _, s in ipairs(params.changed or {}) do
      if util.same_path(s, sb.session) then
        return schedule_refresh(sb)
      end
    end
  end)
  return function()
    off_updated()
    off_changed()
  end
end

return M
