-- :PiSearch {words}: pi/search over every session. The hits go to the
-- quickfix list (each at its entry's line of the session file) and to
-- vim.ui.select; choosing one opens the tree sidebar at the entry's row.
local client = require("pi_sessions.client")
local util = require("pi_sessions.util")

local M = {}

M.LIMIT = 100
M.STARTING_MS = 3000 -- how long an index that knows no file yet is given to list the store
M.WAIT_MS = 10000 -- how long :PiSearch waits for an index being built
local BEFORE_MATCH = 40 -- characters of context kept before the first match
local QF_TITLE = "pi search: "

--- Byte offset in `s` of UTF-16 offset `i` (what the server's ranges count).
local function byte_at(s, i)
  local ok, b = pcall(vim.str_byteindex, s, "utf-16", i, false)
  return ok and b or #s
end

--- The snippet on one line, the matches marked «so», starting a little before
--- the first match. Pure.
function M.marked(hit)
  local s, ranges = hit.snippet or "", {}
  for _, r in ipairs(hit.ranges or {}) do
    ranges[#ranges + 1] = { byte_at(s, r[1]), byte_at(s, r[2]) }
  end
  table.sort(ranges, function(a, b) return a[1] < b[1] end)
  local parts, at = {}, 0
  for _, r in ipairs(ranges) do
    local a, b = math.max(r[1], at), math.min(r[2], #s)
    if a < b then
      parts[#parts + 1] = s:sub(at + 1, a) .. "«" .. s:sub(a + 1, b) .. "»"
      at = b
    end
  end
  parts[#parts + 1] = s:sub(at + 1)
  local text = table.concat(parts):gsub("%s+", " ")
  local first = text:find("«", 1, true)
  if first then
    local chars_before = vim.fn.strchars(text:sub(1, first - 1))
    if chars_before > BEFORE_MATCH then
      text = "…" .. vim.fn.strcharpart(text, chars_before - BEFORE_MATCH)
    end
  end
  return text
end

local function title(hit)
  local t = ((hit.sessionName and hit.sessionName ~= "") and hit.sessionName or hit.firstMessage or ""):gsub("%s+", " ")
  return vim.fn.strchars(t) > 50 and (vim.fn.strcharpart(t, 0, 49) .. "…") or t
end

local function when(iso)
  return (iso or ""):sub(1, 16):gsub("T", " ")
end

--- One line per hit: time, kind, session, marked snippet. Pure.
function M.item_text(hit)
  return ("%s  %-9s  %s  ·  %s"):format(when(hit.timestamp), hit.role or hit.type or "", title(hit), M.marked(hit))
end

--- Quickfix items: the session file at the entry's line (found by its id). Pure.
function M.qf_items(hits)
  local out = {}
  for _, hit in ipairs(hits) do
    out[#out + 1] = {
      filename = require("pi_sessions.names").path(hit.session), -- a URI's file: its path as bytes
      pattern = '\\V"id":"' .. hit.entryId .. '"',
      text = M.item_text(hit),
      user_data = { session = hit.session, entryId = hit.entryId },
    }
  end
  return out
end

--- Opens the tree sidebar on the hit's session, the cursor on its entry's row.
function M.open(hit, on_done)
  local tree = require("pi_sessions.tree")
  tree.open(hit.session, {
    entry = hit.entryId,
    on_found = function(found)
      if not found then
        util.info(("entry %s is not in the tree of %s"):format(hit.entryId, require("pi_sessions.names").display_name(hit.session)))
      end
      local win = tree.win()
      if win then
        vim.api.nvim_set_current_win(win)
      end
      if on_done then
        on_done(found)
      end
    end,
  })
end

--- :PiSearch {words}: asks the server, fills the quickfix list, offers the hits.
function M.run(query, opts)
  opts = opts or {}
  if not query or vim.trim(query) == "" then
    return util.info('usage: :PiSearch {words}  (words, "a phrase", re:pattern)')
  end
  local started = vim.uv.now()
  local function ask()
    client.request("pi/search", { query = query, limit = M.LIMIT }, function(err, result)
      if err then
        return
      end
      -- the index starts with the server's first search: while it lists the store (nothing
      -- indexed nor pending yet) or indexes it, the query is asked again, for a while
      local waited = vim.uv.now() - started
      local pending = (result.pendingFiles or 0) > 0
      local starting = not pending and (result.indexedFiles or 0) == 0
      if (starting and waited < M.STARTING_MS) or (pending and waited < M.WAIT_MS) then
        return vim.defer_fn(ask, 300)
      end
      M.show(query, result, opts)
    end)
  end
  ask()
end

--- The answer: the quickfix list filled, the hits offered with vim.ui.select.
function M.show(query, result, opts)
  local hits = result.hits or {}
  local pending = (result.pendingFiles or 0) > 0 and (", %d files not indexed yet"):format(result.pendingFiles) or ""
  if result.incomplete then
    pending = pending .. ", incomplete: the search ran out of time"
  end
  vim.fn.setqflist({}, " ", { title = QF_TITLE .. query, items = M.qf_items(hits) })
  if #hits == 0 then
    return util.info(("no entry matches %s%s"):format(query, pending))
  end
  -- counting stopped past the page: there may be more
  local count = result.total or #hits
  local total = tostring(count) .. (result.totalAtLeast and "+" or "") .. ((count == 1 and not result.totalAtLeast) and " hit" or " hits")
  if (result.total or 0) > #hits or pending ~= "" then
    util.info(("%d of %s%s"):format(#hits, total, pending))
  end
  vim.ui.select(hits, {
    prompt = ("pi search: %s (%s)"):format(query, total),
    kind = "pi_search",
    format_item = M.item_text,
  }, function(hit)
    if hit then
      M.open(hit, opts.on_done)
    end
  end)
end

--- <CR> in the quickfix window on a :PiSearch list opens the tree at the row
--- (any other list keeps its usual <CR>).
function M.qf_enter()
  local wi = vim.fn.getwininfo(vim.api.nvim_get_current_win())[1]
  if wi and wi.loclist == 1 then
    return vim.cmd("execute \"normal! \\<CR>\"")
  end
  local info = vim.fn.getqflist({ title = 1, idx = 0, items = 1 })
  local item = (info.title or ""):sub(1, #QF_TITLE) == QF_TITLE and info.items[vim.fn.line(".")]
  local data = item and item.user_data
  if type(data) ~= "table" or not data.entryId then
    return vim.cmd("execute \"normal! \\<CR>\"")
  end
  vim.cmd("wincmd p")
  M.open({ session = data.session, entryId = data.entryId })
end

return M
