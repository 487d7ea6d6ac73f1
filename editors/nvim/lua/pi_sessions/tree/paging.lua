-- Fetching a sidebar's rows from pi/getTree in windows of `page_size`: the
-- page under the cursor first, more as the cursor nears them, and the leaf
-- found without fetching everything before it.
local config = require("pi_sessions.config")
local draw = require("pi_sessions.tree.draw")
local edits = require("pi_sessions.tree.edits")
local util = require("pi_sessions.util")
local HEADER = require("pi_sessions.tree.sidebar").HEADER

local M = {}

local function store_page(sb, offset, result)
  for i, row in ipairs(result.rows or {}) do
    sb.rows[offset + i - 1] = row
  end
  draw.rows(sb, offset, result.rows or {})
  edits.mark(sb, offset, result.rows or {})
end

--- Fetch page p (rows p*size .. p*size+size-1) unless it is loaded or loading.
function M.load_page(sb, p, cb)
  cb = cb or function() end
  local size = sb:page_size()
  if sb.pages[p] == "loaded" then
    return cb(true)
  end
  if sb.pages[p] == "loading" or p < 0 or p * size >= sb.total then
    return cb(false)
  end
  sb.pages[p] = "loading"
  local gen = sb.gen
  sb:request("pi/getTree", sb:tree_params(p * size, size), function(err, result)
    if gen ~= sb.gen or not sb:is_open() then
      return
    end
    if err then
      sb.pages[p] = nil
      return cb(false)
    end
    sb.pages[p] = "loaded"
    store_page(sb, p * size, result)
    cb(true)
  end)
end

--- Make sure the rows near the cursor are fetched (called on CursorMoved).
function M.ensure_visible(sb)
  local win = sb:win()
  if not win or sb.total == 0 then
    return
  end
  local size = sb:page_size()
  local idx = sb:cursor_index()
  local margin = math.floor(size / 5)
  local h = vim.api.nvim_win_get_height(win)
  for _, i in ipairs({ idx - margin, idx, idx + h, idx + h + margin }) do
    i = math.max(0, math.min(sb.total - 1, i))
    M.load_page(sb, math.floor(i / size))
  end
end

local function set_cursor(sb, idx)
  local win = sb:win()
  if not win then
    return
  end
  local lnum = sb.total == 0 and 1 or HEADER + 1 + math.max(0, math.min(idx, sb.total - 1))
  pcall(vim.api.nvim_win_set_cursor, win, { lnum, 0 })
  M.ensure_visible(sb)
end

local function find_loaded(sb, pred)
  for i, row in pairs(sb.rows) do
    if pred(row) then
      return i
    end
  end
end

local function last_active_loaded(sb)
  local best
  for i, row in pairs(sb.rows) do
    if row.onActivePath and (not best or i > best) then
      best = i
    end
  end
  return best or 0
end

-- The active path is drawn first (pi puts the branch holding the leaf first),
-- so onActivePath is true for a prefix of the rows: binary-search its end with
-- one-row requests instead of fetching everything before the leaf.
local function find_leaf(sb, cb)
  local i = find_loaded(sb, function(r) return r.isLeaf end)
  if i then
    return cb(i)
  end
  local size = sb:page_size()
  local last = sb.rows[math.min(size, sb.total) - 1]
  if not last or not last.onActivePath or sb.total <= size then
    return cb(nil) -- the leaf is hidden by the filter: the caller takes the last active row
  end
  local lo, hi = size - 1, sb.total
  local gen = sb.gen
  local function step()
    if hi - lo <= 1 then
      return cb(lo)
    end
    local mid = math.floor((lo + hi) / 2)
    sb:request("pi/getTree", sb:tree_params(mid, 1), function(err, result)
      if err or gen ~= sb.gen then
        return cb(lo)
      end
      local row = result.rows and result.rows[1]
      if row and row.isLeaf then
        return cb(mid)
      end
      if row and row.onActivePath then
        lo = mid
      else
        hi = mid
      end
      step()
    end)
  end
  step()
end

-- Put the cursor on the leaf (or the end of the active path) once it is found.
local function focus_leaf(sb, gen)
  find_leaf(sb, function(idx)
    if gen ~= sb.gen then
      return
    end
    idx = idx or last_active_loaded(sb)
    M.load_page(sb, math.floor(idx / sb:page_size()), function()
      set_cursor(sb, idx)
    end)
  end)
end

-- Put the cursor on the row of entry `id`, looked for window by window (only
-- ids are needed: the page the cursor lands on is then fetched as usual). The filter "all" is tried when the one shown hides the entry (labels,
-- session names); cb(found) at the end.
local function focus_entry(sb, gen, id, cb)
  local stand_in -- pi draws no row for a tool call: its result's row (a child) stands for it
  local function land(idx)
    M.load_page(sb, math.floor(idx / sb:page_size()), function()
      set_cursor(sb, idx)
      cb(true)
    end)
  end
  local function scan(offset)
    if offset >= sb.total and stand_in then
      return land(stand_in)
    end
    if offset >= sb.total then
      if sb.filter == "all" then
        return cb(false)
      end
      sb.filter = "all"
      return M.refresh(sb, { focus_id = id, on_found = cb })
    end
    sb:request("pi/getTree", sb:tree_params(offset, sb:page_size()), function(err, result)
      if err or gen ~= sb.gen then
        return cb(false)
      end
      for i, row in ipairs(result.rows or {}) do
        if row.id == id then
          return land(offset + i - 1)
        end
        if row.parentId == id and not stand_in then
          stand_in = offset + i - 1
        end
      end
      local got = #(result.rows or {})
      scan(got > 0 and offset + got or sb.total)
    end)
  end
  local i = find_loaded(sb, function(r) return r.id == id end)
  if i then
    set_cursor(sb, i)
    return cb(true)
  end
  scan(0)
end

--- Re-fetch the tree. opts.focus = "leaf" puts the cursor on the leaf;
--- opts.focus_id on that entry's row (opts.on_found(found) after);
--- opts.keep_id keeps it on that entry if it is still shown; opts.on_done
--- runs once the first page is drawn.
function M.refresh(sb, opts)
  opts = opts or {}
  if not sb:is_open() then
    return
  end
  sb.gen = sb.gen + 1
  local gen, size = sb.gen, sb:page_size()
  local cur_idx = sb:cursor_index() or 0
  local keep_id = opts.keep_id
  if keep_id == nil and opts.focus ~= "leaf" then
    local row = sb.rows[cur_idx]
    keep_id = row and row.id
  end
  local first_page = (opts.focus == "leaf" or opts.focus_id) and 0 or math.max(0, math.floor(cur_idx / size))
  local function got(err, result, page)
    if err or gen ~= sb.gen or not sb:is_open() then
      return
    end
    local total = result.total or 0
    if page > 0 and page * size >= total and total > 0 then
      -- the tree shrank below the page we asked for: start over at the top
      return sb:request("pi/getTree", sb:tree_params(0, size), function(e, r)
        got(e, r, 0)
      end)
    end
    sb.rows, sb.pages = {}, {}
    sb.total, sb.leaf_id = total, result.leafId
    sb.live = type(result.live) == "table" and result.live or nil
    draw.reset(sb, total)
    sb.pages[page] = "loaded"
    store_page(sb, page * size, result)
    edits.load(sb, gen)
    require("pi_sessions.stats").load(sb, gen)
    if opts.focus_id then
      focus_entry(sb, gen, opts.focus_id, opts.on_found or function() end)
    elseif opts.focus == "leaf" then
      focus_leaf(sb, gen)
    else
      local idx = keep_id and find_loaded(sb, function(r) return r.id == keep_id end)
      set_cursor(sb, idx or cur_idx)
    end
    if opts.on_done then
      opts.on_done()
    end
  end
  sb:request("pi/getTree", sb:tree_params(first_page * size, size), function(err, result)
    got(err, result, first_page)
  end)
end

--- Show `session` in the sidebar: a new session starts from the configured
--- view; the header takes the session's name once the server has said it.
function M.show(sb, session, opts)
  opts = opts or {}
  if sb.session ~= session then
    sb.folded, sb.search = {}, ""
    sb.filter = config.options.filter or "default"
    sb.rows, sb.pages, sb.total, sb.edits, sb.stats = {}, {}, 0, {}, nil
  end
  sb.session = session
  sb.name = opts.name or require("pi_sessions.names").display_name(session, nil, true)
  draw.reset(sb, 0)
  -- opts.entry: the cursor goes to that entry's row (opts.on_found(found) after), else to the leaf
  M.refresh(sb, { focus = "leaf", focus_id = opts.entry, on_found = opts.on_found, on_done = opts.on_done })
  sb:request("pi/listSessions", {}, function(err, result)
    if err or not sb:is_open() or sb.session ~= session then
      return
    end
    for _, s in ipairs(result.sessions or {}) do
      if util.same_path(s.session, session) then
        local first = (s.firstMessage or ""):gsub("%s+", " ")
        sb.name = s.name or (vim.fn.strchars(first) > 40 and (vim.fn.strcharpart(first, 0, 39) .. "…") or first)
        draw.header(sb)
      end
    end
  end, { quiet = true })
end

return M
