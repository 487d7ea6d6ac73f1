-- One tree sidebar per tabpage (as outline.nvim keeps one outline per tab):
-- what it shows (session, filter, search, folds), the rows fetched so far and
-- its requests in flight. Nothing here draws or talks to windows beyond
-- finding its own.
local client = require("pi_sessions.client")
local config = require("pi_sessions.config")
local render = require("pi_sessions.render")

local M = {}

M.HEADER = 1 -- buffer lines above the first row

local Sidebar = {}
Sidebar.__index = Sidebar

local by_tab = {} -- tabpage handle -> Sidebar

--- A fresh sidebar for `tab` (the current tabpage by default), replacing any.
function M.new(tab)
  tab = tab or vim.api.nvim_get_current_tabpage()
  local sb = setmetatable({
    tab = tab,
    buf = nil,
    session = nil,
    name = nil,
    filter = nil,
    search = "",
    folded = {}, -- id -> true
    edits = {}, -- id -> "omitted" | "replaced": context edits in force at the leaf
    stats = nil, -- pi/getSessionStats at the leaf (nil: not fetched, or a server without it)
    total = 0,
    leaf_id = nil,
    live = nil, -- the pi that holds the session (docs/protocol.md, live sessions), nil for none
    rows = {}, -- 0-based row index -> row
    pages = {}, -- page index -> "loading" | "loaded"
    gen = 0, -- bumped on every refresh so stale replies are dropped
    busy = 0, -- requests in flight (tests wait for 0)
    pending_refresh = false, -- a live refresh is scheduled
    unsubscribe = nil, -- ends the live subscriptions made on open
  }, Sidebar)
  by_tab[tab] = sb
  return sb
end

--- The open sidebar of `tab` (default: the current tabpage), or nil.
function M.get(tab)
  local sb = by_tab[tab or vim.api.nvim_get_current_tabpage()]
  if sb and sb:is_open() then
    return sb
  end
end

--- Every sidebar still registered, whatever its tabpage.
function M.all()
  return vim.tbl_values(by_tab)
end

--- Drop a sidebar from the registry (its buffer is gone or its tab closed).
function M.forget(sb)
  if by_tab[sb.tab] == sb then
    by_tab[sb.tab] = nil
  end
  if sb.unsubscribe then
    sb.unsubscribe()
    sb.unsubscribe = nil
  end
end

function Sidebar:is_open()
  return self.buf ~= nil and vim.api.nvim_buf_is_valid(self.buf)
end

--- The window showing this sidebar in its own tabpage, or nil.
function Sidebar:win()
  if not self:is_open() or not vim.api.nvim_tabpage_is_valid(self.tab) then
    return nil
  end
  for _, win in ipairs(vim.api.nvim_tabpage_list_wins(self.tab)) do
    if vim.api.nvim_win_get_buf(win) == self.buf then
      return win
    end
  end
end

--- No request in flight and no refresh scheduled.
function Sidebar:is_idle()
  return self.busy == 0 and not self.pending_refresh
end

function Sidebar:page_size()
  return math.max(1, config.options.page_size or 500)
end

--- 0-based index of the row under the cursor (-1 on the header), or nil.
function Sidebar:cursor_index()
  local win = self:win()
  if not win then
    return nil
  end
  return vim.api.nvim_win_get_cursor(win)[1] - M.HEADER - 1
end

--- The row under the cursor (nil on the header or a row not fetched yet).
function Sidebar:current_row()
  local idx = self:cursor_index()
  return idx and self.rows[idx]
end

--- pi/getTree params for this sidebar's view.
function Sidebar:tree_params(offset, limit)
  local folded = vim.tbl_keys(self.folded)
  table.sort(folded)
  return {
    session = self.session,
    filter = self.filter,
    search = self.search ~= "" and self.search or nil,
    folded = folded,
    offset = offset,
    limit = limit,
    sharedGutters = true, -- gutters once per window: a deep tree's rows would carry ~100 each
  }
end

--- client.request, counted in `busy` so callers can wait for quiet.
function Sidebar:request(method, params, cb, opts)
  self.busy = self.busy + 1
  client.request(method, params, function(err, result)
    self.busy = self.busy - 1
    if method == "pi/getTree" and not err then
      render.expand_gutters(result)
    end
    cb(err, result)
  end, opts)
end

return M
