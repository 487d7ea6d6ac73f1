-- The tree sidebar: pi's /tree rows for a session in a scratch buffer, one
-- sidebar per tabpage. This module ties the parts together and is what the
-- rest of the plugin calls: sidebar.lua (state), window.lua (buffer and
-- split), paging.lua (rows from the server), actions.lua + keymaps.lua (what
-- keys do), live.lua (refresh when the file changes).
local actions = require("pi_sessions.tree.actions")
local draw = require("pi_sessions.tree.draw")
local keymaps = require("pi_sessions.tree.keymaps")
local live = require("pi_sessions.tree.live")
local paging = require("pi_sessions.tree.paging")
local sidebar = require("pi_sessions.tree.sidebar")
local util = require("pi_sessions.util")
local window = require("pi_sessions.tree.window")

local M = {}

M.ns = draw.ns
M.actions = actions

-- Fields read from the current tabpage's sidebar: `state` is the sidebar
-- itself ({} when the tab has none), the others are results actions keep.
local PER_TAB = { last_summary = true, last_editor_text = true }
setmetatable(M, {
  __index = function(_, key)
    local sb = sidebar.get()
    if key == "state" then
      return sb or {}
    elseif PER_TAB[key] then
      return sb and sb[key]
    end
  end,
  __newindex = function(t, key, value)
    if PER_TAB[key] then
      local sb = sidebar.get()
      if sb then
        sb[key] = value
      end
      return
    end
    rawset(t, key, value)
  end,
})

--- The current tabpage's sidebar object, or nil.
function M.sidebar()
  return sidebar.get()
end

function M.is_open()
  return sidebar.get() ~= nil
end

function M.win()
  local sb = sidebar.get()
  return sb and sb:win()
end

--- No request in flight and no refresh scheduled in this tab's sidebar.
function M.is_idle()
  local sb = sidebar.get()
  return sb == nil or sb:is_idle()
end

function M.session()
  local sb = sidebar.get()
  return sb and sb.session
end

--- The row under the cursor in this tab's sidebar (nil on the header or a
--- row not fetched yet).
function M.current_row()
  local sb = sidebar.get()
  return sb and sb:current_row()
end

function M.refresh(opts)
  local sb = sidebar.get()
  if sb then
    paging.refresh(sb, opts)
  end
end

--- Fetch the rows near the cursor (also done on CursorMoved).
function M.ensure_visible()
  local sb = sidebar.get()
  if sb then
    paging.ensure_visible(sb)
  end
end

--- Run a sidebar action by name (see actions.lua) on this tab's sidebar.
function M.run(name, row)
  local sb = sidebar.get()
  if not sb then
    return util.info("no sidebar in this tab")
  end
  return actions.run(name, sb, row)
end

function M.show_entry(row)
  return M.run("entry", row)
end

--- A session was renamed: every sidebar showing it takes the new name.
function M.set_name(session, name)
  for _, sb in ipairs(sidebar.all()) do
    if sb:is_open() and util.same_path(sb.session, session) then
      sb.name = name
      paging.refresh(sb)
    end
  end
end

local group = vim.api.nvim_create_augroup("pi_sessions_tree", { clear = true })

-- Tabs closed with their sidebar still registered: wipe what they left
-- (scheduled: during TabClosed the closed tab is still valid).
vim.api.nvim_create_autocmd("TabClosed", {
  group = group,
  callback = vim.schedule_wrap(function()
    for _, sb in ipairs(sidebar.all()) do
      if not vim.api.nvim_tabpage_is_valid(sb.tab) then
        sidebar.forget(sb)
        if sb:is_open() then
          pcall(vim.api.nvim_buf_delete, sb.buf, { force = true })
        end
      end
    end
  end),
})

-- A new sidebar for the current tab: its buffer, keys and live updates.
local function create()
  local sb = sidebar.new()
  sb.buf = window.create_buffer(sb.tab)
  keymaps.apply(sb.buf, function() return sb end)
  vim.api.nvim_create_autocmd("CursorMoved", {
    group = group,
    buffer = sb.buf,
    callback = function()
      paging.ensure_visible(sb)
    end,
  })
  vim.api.nvim_create_autocmd("BufWipeout", {
    group = group,
    buffer = sb.buf,
    callback = function()
      sidebar.forget(sb)
      sb.buf = nil
    end,
  })
  sb.unsubscribe = live.watch(sb)
  return sb
end

--- Open this tab's sidebar on `session` (path of the .jsonl file, or the
--- `file:` URI the server gives a name that is not UTF-8).
--- opts.name: the header's title; opts.on_done: called when rows are drawn.
function M.open(session, opts)
  session = require("pi_sessions.names").session(session)
  local sb = sidebar.get() or create()
  window.open(sb)
  paging.show(sb, session, opts)
end

--- Close this tab's sidebar.
function M.close()
  local sb = sidebar.get()
  if sb then
    window.close(sb)
  end
end

--- Close every sidebar in every tab.
function M.close_all()
  for _, sb in ipairs(sidebar.all()) do
    window.close(sb)
    sidebar.forget(sb)
  end
end

return M
