-- The tree sidebar: one scratch buffer showing pi's /tree rows for a session,
-- fetched window by window, with the keys that act on the row under the cursor.
local client = require("pi_sessions.client")
local config = require("pi_sessions.config")
local render = require("pi_sessions.render")
local util = require("pi_sessions.util")

local M = {}
local ns = vim.api.nvim_create_namespace("pi_sessions_tree")
M.ns = ns

local HEADER = 1 -- lines above the first row

-- The sidebar state; there is one sidebar at a time.
local S = {
  buf = nil,
  session = nil,
  name = nil,
  filter = nil,
  search = "",
  folded = {}, -- id -> true
  total = 0,
  leaf_id = nil,
  rows = {}, -- 0-based row index -> row
  pages = {}, -- page index -> "loading" | "loaded"
  gen = 0, -- bumped on every refresh so stale replies are dropped
  busy = 0, -- requests in flight (tests wait for 0)
}
M.state = S

function M.is_open()
  return S.buf ~= nil and vim.api.nvim_buf_is_valid(S.buf)
end

function M.win()
  if not M.is_open() then
    return nil
  end
  for _, win in ipairs(vim.api.nvim_list_wins()) do
    if vim.api.nvim_win_get_buf(win) == S.buf then
      return win
    end
  end
end

--- No request in flight and no refresh scheduled (tests wait on this).
function M.is_idle()
  return S.busy == 0 and not M._pending_refresh
end

function M.session()
  return M.is_open() and S.session or nil
end

local function page_size()
  return math.max(1, config.options.page_size or 500)
end

local function folded_list()
  local out = {}
  for id in pairs(S.folded) do
    out[#out + 1] = id
  end
  table.sort(out)
  return out
end

local function tree_params(offset, limit)
  return {
    session = S.session,
    filter = S.filter,
    search = S.search ~= "" and S.search or nil,
    folded = folded_list(),
    offset = offset,
    limit = limit,
  }
end

local function request(method, params, cb, opts)
  S.busy = S.busy + 1
  client.request(method, params, function(err, result)
    S.busy = S.busy - 1
    cb(err, result)
  end, opts)
end

local function set_lines(first, last, lines)
  vim.bo[S.buf].modifiable = true
  vim.api.nvim_buf_set_lines(S.buf, first, last, false, lines)
  vim.bo[S.buf].modifiable = false
end

local function draw_header()
  set_lines(0, HEADER, { render.header(S.name, S.filter, S.search, S.total) })
  vim.api.nvim_buf_clear_namespace(S.buf, ns, 0, HEADER)
  vim.api.nvim_buf_set_extmark(S.buf, ns, 0, 0, { end_row = 0, end_col = #vim.api.nvim_buf_get_lines(S.buf, 0, 1, false)[1], hl_group = "PiTreeHeader" })
end

-- Draw rows [from, from + #rows) into their lines, with highlights.
local function draw_rows(from, rows)
  local lines, hls = {}, {}
  for i, row in ipairs(rows) do
    local line, h = render.row(row)
    lines[i] = line
    hls[i] = h
  end
  set_lines(HEADER + from, HEADER + from + #rows, lines)
  vim.api.nvim_buf_clear_namespace(S.buf, ns, HEADER + from, HEADER + from + #rows)
  for i, h in ipairs(hls) do
    local lnum = HEADER + from + i - 1
    for _, span in ipairs(h) do
      vim.api.nvim_buf_set_extmark(S.buf, ns, lnum, span[2], { end_col = span[3], hl_group = span[1] })
    end
  end
end

-- Replace the whole buffer with the header and one placeholder per row.
local function reset_buffer(total)
  local lines = { "" }
  for i = 1, total do
    lines[i + 1] = render.PLACEHOLDER
  end
  set_lines(0, -1, lines)
  vim.api.nvim_buf_clear_namespace(S.buf, ns, 0, -1)
  draw_header()
end

local function store_page(offset, result)
  for i, row in ipairs(result.rows or {}) do
    S.rows[offset + i - 1] = row
  end
  draw_rows(offset, result.rows or {})
end

--- Fetch page p (rows p*size .. p*size+size-1) unless it is loaded or loading.
local function load_page(p, cb)
  cb = cb or function() end
  if S.pages[p] == "loaded" then
    return cb(true)
  end
  if S.pages[p] == "loading" or p < 0 or p * page_size() >= S.total then
    return cb(false)
  end
  S.pages[p] = "loading"
  local gen = S.gen
  request("pi/getTree", tree_params(p * page_size(), page_size()), function(err, result)
    if gen ~= S.gen or not M.is_open() then
      return
    end
    if err then
      S.pages[p] = nil
      return cb(false)
    end
    S.pages[p] = "loaded"
    store_page(p * page_size(), result)
    cb(true)
  end)
end

--- Make sure the rows near the cursor are fetched (called on CursorMoved).
function M.ensure_visible()
  local win = M.win()
  if not win or S.total == 0 then
    return
  end
  local idx = vim.api.nvim_win_get_cursor(win)[1] - HEADER - 1
  local margin = math.floor(page_size() / 5)
  local h = vim.api.nvim_win_get_height(win)
  for _, i in ipairs({ idx - margin, idx, idx + h, idx + h + margin }) do
    i = math.max(0, math.min(S.total - 1, i))
    load_page(math.floor(i / page_size()))
  end
end

local function set_cursor(idx)
  local win = M.win()
  if not win then
    return
  end
  local lnum = HEADER + 1 + math.max(0, math.min(idx, S.total - 1))
  if S.total == 0 then
    lnum = 1
  end
  pcall(vim.api.nvim_win_set_cursor, win, { lnum, 0 })
  M.ensure_visible()
end

local function find_loaded(pred)
  for i, row in pairs(S.rows) do
    if pred(row) then
      return i
    end
  end
end

-- The active path is drawn first (pi puts the branch holding the leaf first),
-- so onActivePath is true for a prefix of the rows: binary-search its end with
-- one-row requests instead of fetching everything before the leaf.
local function find_leaf(cb)
  local i = find_loaded(function(r) return r.isLeaf end)
  if i then
    return cb(i)
  end
  local last = S.rows[math.min(page_size(), S.total) - 1]
  if not last or not last.onActivePath or S.total <= page_size() then
    return cb(nil) -- the leaf is hidden by the filter: the caller takes the last active row
  end
  local lo, hi = page_size() - 1, S.total
  local gen = S.gen
  local function step()
    if hi - lo <= 1 then
      return cb(lo)
    end
    local mid = math.floor((lo + hi) / 2)
    request("pi/getTree", tree_params(mid, 1), function(err, result)
      if err or gen ~= S.gen then
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

local function last_active_loaded()
  local best
  for i, row in pairs(S.rows) do
    if row.onActivePath and (not best or i > best) then
      best = i
    end
  end
  return best or 0
end

--- Re-fetch the tree. opts.focus = "leaf" puts the cursor on the leaf;
--- opts.keep_id keeps it on that entry if it is still shown.
function M.refresh(opts)
  opts = opts or {}
  if not M.is_open() then
    return
  end
  S.gen = S.gen + 1
  local gen = S.gen
  local win = M.win()
  local cur_idx = win and (vim.api.nvim_win_get_cursor(win)[1] - HEADER - 1) or 0
  local keep_id = opts.keep_id
  if keep_id == nil and opts.focus ~= "leaf" then
    local row = S.rows[cur_idx]
    keep_id = row and row.id
  end
  local first_page = math.max(0, math.floor(cur_idx / page_size()))
  if opts.focus == "leaf" then
    first_page = 0
  end
  local function got(err, result, page)
    if gen ~= S.gen or not M.is_open() then
      return
    end
    if err then
      return
    end
    if page > 0 and page * page_size() >= (result.total or 0) and (result.total or 0) > 0 then
      -- the tree shrank below the page we asked for: start over at the top
      return request("pi/getTree", tree_params(0, page_size()), function(e, r)
        got(e, r, 0)
      end)
    end
    S.rows, S.pages = {}, {}
    S.total = result.total or 0
    S.leaf_id = result.leafId
    reset_buffer(S.total)
    S.pages[page] = "loaded"
    store_page(page * page_size(), result)
    if opts.focus == "leaf" then
      find_leaf(function(idx)
        if gen ~= S.gen then
          return
        end
        if not idx then
          idx = last_active_loaded()
        end
        load_page(math.floor(idx / page_size()), function()
          set_cursor(idx)
        end)
      end)
    else
      local idx = keep_id and find_loaded(function(r) return r.id == keep_id end)
      set_cursor(idx or cur_idx)
    end
    if opts.on_done then
      opts.on_done()
    end
  end
  request("pi/getTree", tree_params(first_page * page_size(), page_size()), function(err, result)
    got(err, result, first_page)
  end)
end

--- The row under the cursor in the sidebar (nil on the header or a placeholder).
function M.current_row()
  local win = M.win()
  if not win then
    return nil
  end
  local idx = vim.api.nvim_win_get_cursor(win)[1] - HEADER - 1
  return S.rows[idx]
end

local function with_row(fn)
  return function()
    local row = M.current_row()
    if not row then
      util.info("no entry under the cursor")
      return
    end
    fn(row)
  end
end

-- Actions ------------------------------------------------------------------

local SWITCH_CHOICES = {
  { key = "plain", text = "Switch (no summary)" },
  { key = "summary", text = "Switch and summarize the abandoned branch" },
  { key = "instructions", text = "Switch and summarize with instructions…" },
  { key = "fork", text = "Fork into a new session from here" },
}

local function after_switch(result)
  local msg = "leaf is now " .. tostring(result.leafId)
  if result.summaryEntryId then
    msg = msg .. ", summary " .. result.summaryEntryId
  end
  if result.queued then
    msg = msg .. " (queued until pi's turn ends)"
  end
  if result.editorText and result.editorText ~= "" then
    util.set_register(result.editorText)
    M.last_editor_text = result.editorText
    msg = msg .. '; the message text is in register " — paste it into pi to edit and resubmit'
  end
  util.info(msg)
  M.refresh({ focus = "leaf" })
end

function M.fork(leaf_id)
  request("pi/fork", { session = S.session, leafId = leaf_id }, function(err, result)
    if err then
      return
    end
    util.info("forked into " .. vim.fn.fnamemodify(result.session, ":t"))
    M.open(result.session)
  end)
end

function M.switch(row)
  vim.ui.select(SWITCH_CHOICES, {
    prompt = "Switch to " .. row.title:sub(1, 60),
    format_item = function(c) return c.text end,
  }, function(choice)
    if not choice then
      return
    end
    if choice.key == "fork" then
      return M.fork(row.id)
    end
    local params = { session = S.session, targetId = row.id }
    local function go()
      request("pi/switchBranch", params, function(err, result)
        if not err then
          after_switch(result)
        end
      end)
    end
    if choice.key == "plain" then
      go()
    elseif choice.key == "summary" then
      params.summarize = true
      go()
    else
      vim.ui.input({ prompt = "Summary instructions: " }, function(text)
        if text == nil then
          return
        end
        params.summarize = true
        if text ~= "" then
          params.customInstructions = text
        end
        go()
      end)
    end
  end)
end

function M.summarize(row)
  util.info("summarizing the branch to " .. row.id .. "…")
  request("pi/summarizeBranch", { session = S.session, targetId = row.id }, function(err, result)
    if err then
      return
    end
    local lines = vim.split(result.summary or "", "\n", { plain = true })
    M.last_summary = result
    util.float(lines, "markdown", ("branch summary (%s)"):format(result.source or "?"))
  end)
end

function M.label(row)
  vim.ui.input({ prompt = "Label (empty clears): ", default = row.label or "" }, function(text)
    if text == nil then
      return
    end
    text = vim.trim(text)
    request("pi/setLabel", { session = S.session, targetId = row.id, label = text }, function(err, result)
      if err then
        return
      end
      if result.queued then
        util.info("label queued until pi's turn ends")
      end
      M.refresh({ keep_id = row.id })
    end)
  end)
end

function M.cycle_filter()
  local filters = config.filters
  local i = 1
  for k, f in ipairs(filters) do
    if f == S.filter then
      i = k
    end
  end
  S.filter = filters[i % #filters + 1]
  M.refresh()
end

function M.set_filter(filter)
  S.filter = filter
  M.refresh()
end

function M.prompt_search()
  vim.ui.input({ prompt = "Search (empty clears): ", default = S.search }, function(text)
    if text == nil then
      return
    end
    S.search = vim.trim(text)
    M.refresh()
  end)
end

function M.toggle_fold(row)
  if not (row.foldable or row.folded) then
    util.info("this row has nothing to fold")
    return
  end
  S.folded[row.id] = (not S.folded[row.id]) or nil
  M.refresh({ keep_id = row.id })
end

function M.show_entry(row)
  request("pi/getEntry", { session = S.session, id = row.id }, function(err, result)
    if err then
      return
    end
    util.float(vim.split(util.json(result.entry), "\n", { plain = true }), "json", "entry " .. row.id)
  end)
end

function M.yank_context(row, format)
  format = format or config.options.context_format or "agent"
  request("pi/buildContext", { session = S.session, leafId = row.id, format = format }, function(err, result)
    if err then
      return
    end
    util.set_register(util.json(result))
    util.info(("context (%s, %d messages, ~%s tokens) yanked"):format(format, #(result.messages or {}), tostring(result.tokens)))
  end)
end

function M.yank_context_pick(row)
  vim.ui.select({ "agent", "llm", "anthropic", "openai" }, { prompt = "Context format" }, function(format)
    if format then
      M.yank_context(row, format)
    end
  end)
end

function M.close()
  local win = M.win()
  if win then
    if #vim.api.nvim_list_wins() == 1 then
      vim.cmd("enew")
    else
      vim.api.nvim_win_close(win, true)
    end
  end
  if M.is_open() then
    pcall(vim.api.nvim_buf_delete, S.buf, { force = true })
  end
end

-- Buffer and window -----------------------------------------------------------

local function set_keymaps(buf)
  local km = config.options.keymaps or {}
  local map = function(name, fn, desc)
    local lhs = km[name]
    if lhs and lhs ~= false and lhs ~= "" then
      vim.keymap.set("n", lhs, fn, { buffer = buf, nowait = true, silent = true, desc = "pi: " .. desc })
    end
  end
  map("switch", with_row(M.switch), "switch to this entry")
  map("summarize", with_row(M.summarize), "summarize the branch to this entry")
  map("label", with_row(M.label), "set or clear the label")
  map("filter", M.cycle_filter, "cycle the filter")
  map("search", M.prompt_search, "search")
  map("fold", with_row(M.toggle_fold), "toggle fold")
  map("entry", with_row(M.show_entry), "show the entry JSON")
  map("yank", with_row(function(r) M.yank_context(r) end), "yank the context JSON")
  map("yank_format", with_row(M.yank_context_pick), "yank the context JSON in a format")
  map("refresh", function() M.refresh() end, "refresh")
  map("close", M.close, "close")
end

local function create_buffer()
  local buf = vim.api.nvim_create_buf(false, true)
  vim.bo[buf].buftype = "nofile"
  vim.bo[buf].bufhidden = "hide"
  vim.bo[buf].swapfile = false
  vim.bo[buf].modifiable = false
  pcall(vim.api.nvim_buf_set_name, buf, "pi-tree")
  vim.bo[buf].filetype = "pi_tree"
  set_keymaps(buf)
  local group = vim.api.nvim_create_augroup("pi_sessions_tree_buf", { clear = true })
  vim.api.nvim_create_autocmd("CursorMoved", { group = group, buffer = buf, callback = M.ensure_visible })
  vim.api.nvim_create_autocmd("BufWipeout", {
    group = group,
    buffer = buf,
    callback = function()
      S.buf = nil
    end,
  })
  return buf
end

local function open_window()
  local win = M.win()
  if win then
    vim.api.nvim_set_current_win(win)
    return win
  end
  local sb = config.options.sidebar or {}
  vim.cmd((sb.position == "right" and "botright" or "topleft") .. " vertical " .. (sb.width or 60) .. "split")
  win = vim.api.nvim_get_current_win()
  vim.api.nvim_win_set_buf(win, S.buf)
  local wo = vim.wo[win]
  wo.number, wo.relativenumber, wo.wrap, wo.cursorline = false, false, false, true
  wo.signcolumn, wo.foldcolumn, wo.spell, wo.list = "no", "0", false, false
  wo.winfixwidth = true
  return win
end

--- Open the sidebar on `session` (absolute path of the .jsonl file).
function M.open(session, opts)
  opts = opts or {}
  session = vim.fs.normalize(vim.fn.fnamemodify(session, ":p"))
  local fresh = not M.is_open()
  if fresh then
    S.buf = create_buffer()
  end
  if fresh or S.session ~= session then
    -- a new sidebar or another session: start from the configured view
    S.folded, S.search = {}, ""
    S.filter = config.options.filter or "default"
    S.rows, S.pages, S.total = {}, {}, 0
  end
  S.session = session
  S.name = opts.name or vim.fn.fnamemodify(session, ":t:r")
  open_window()
  reset_buffer(0)
  M.refresh({ focus = "leaf", on_done = opts.on_done })
  -- the session's name, when it has one, is nicer than the file name
  request("pi/listSessions", {}, function(err, result)
    if err or not M.is_open() or S.session ~= session then
      return
    end
    for _, s in ipairs(result.sessions or {}) do
      if util.same_path(s.session, session) then
        local first = (s.firstMessage or ""):gsub("%s+", " ")
        S.name = s.name or (vim.fn.strchars(first) > 40 and (vim.fn.strcharpart(first, 0, 39) .. "…") or first)
        draw_header()
      end
    end
  end, { quiet = true })
end

-- Live refresh: the server says the displayed session grew or was rewritten.
local function schedule_refresh()
  if M._pending_refresh then
    return
  end
  M._pending_refresh = true
  vim.defer_fn(function()
    M._pending_refresh = false
    M.refresh()
  end, 30)
end

client.on("pi/sessionUpdated", function(params)
  if M.is_open() and util.same_path(params.session, S.session) then
    schedule_refresh()
  end
end)

client.on("pi/sessionsChanged", function(params)
  if not M.is_open() then
    return
  end
  for _, s in ipairs(params.removed or {}) do
    if util.same_path(s, S.session) then
      util.info("the session file was removed")
      return
    end
  end
  for _, s in ipairs(params.changed or {}) do
    if util.same_path(s, S.session) then
      return schedule_refresh()
    end
  end
end)

return M
