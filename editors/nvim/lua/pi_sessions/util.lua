-- Small helpers shared by the modules: pretty JSON, relative times, scratch
-- buffers and floats.
local M = {}

local function is_array(t)
  if getmetatable(t) == vim._empty_dict_mt then
    return false
  end
  if next(t) == nil then
    return true -- an empty decoded array has no metatable
  end
  return vim.islist(t)
end

--- Pretty-printed JSON with sorted keys (Lua tables keep no key order, so a
--- stable order beats a random one); `first` lists top-level keys to put
--- before the others, in that order (what a reader looks for first).
function M.json(value, indent, first)
  indent = indent or ""
  local t = type(value)
  if value == vim.NIL or value == nil then
    return "null"
  elseif t == "table" then
    local inner = indent .. "  "
    if is_array(value) then
      if #value == 0 then
        return "[]"
      end
      local parts = {}
      for _, v in ipairs(value) do
        parts[#parts + 1] = inner .. M.json(v, inner)
      end
      return "[\n" .. table.concat(parts, ",\n") .. "\n" .. indent .. "]"
    end
    local keys = vim.tbl_keys(value)
    if #keys == 0 then
      return "{}"
    end
    local rank = {}
    for i, k in ipairs(first or {}) do
      rank[k] = i
    end
    table.sort(keys, function(a, b)
      local ra, rb = rank[a] or math.huge, rank[b] or math.huge
      if ra ~= rb then
        return ra < rb
      end
      return tostring(a) < tostring(b)
    end)
    local parts = {}
    for _, k in ipairs(keys) do
      parts[#parts + 1] = inner .. vim.json.encode(tostring(k)) .. ": " .. M.json(value[k], inner)
    end
    return "{\n" .. table.concat(parts, ",\n") .. "\n" .. indent .. "}"
  else
    return vim.json.encode(value)
  end
end

--- Seconds since the epoch for an ISO 8601 UTC time ("2026-11-30T09:02:08.000Z").
function M.parse_iso(iso)
  if type(iso) ~= "string" then
    return nil
  end
  local y, mo, d, h, mi, s = iso:match("^(%d+)-(%d+)-(%d+)T(%d+):(%d+):(%d+)")
  if not y then
    return nil
  end
  local t = { year = tonumber(y), month = tonumber(mo), day = tonumber(d), hour = tonumber(h), min = tonumber(mi), sec = tonumber(s), isdst = false }
  -- os.time reads local time; correct by the local offset from UTC at that moment
  local local_ts = os.time(t)
  local utc_as_local = os.time(os.date("!*t", local_ts))
  return local_ts + (local_ts - utc_as_local)
end

--- "just now", "5m ago", "3h ago", "2d ago", "4mo ago", "1y ago".
function M.relative_time(iso, now)
  local ts = M.parse_iso(iso)
  if not ts then
    return "?"
  end
  local diff = (now or os.time()) - ts
  if diff < 0 then
    diff = 0
  end
  if diff < 60 then
    return "just now"
  elseif diff < 3600 then
    return math.floor(diff / 60) .. "m ago"
  elseif diff < 86400 then
    return math.floor(diff / 3600) .. "h ago"
  elseif diff < 86400 * 30 then
    return math.floor(diff / 86400) .. "d ago"
  elseif diff < 86400 * 365 then
    return math.floor(diff / (86400 * 30)) .. "mo ago"
  end
  return math.floor(diff / (86400 * 365)) .. "y ago"
end

--- Two sessions name the same file (a `file:` URI and a path alike).
function M.same_path(a, b)
  return require("pi_sessions.names").same(a, b)
end

local function scratch_buf(lines, ft, name)
  local buf = vim.api.nvim_create_buf(false, true)
  vim.bo[buf].bufhidden = "wipe"
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modifiable = false
  if ft then
    vim.bo[buf].filetype = ft
  end
  if name then
    pcall(vim.api.nvim_buf_set_name, buf, name)
  end
  return buf
end

--- Text in a centered float; q / <Esc> close it.
function M.float(lines, ft, title)
  local buf = scratch_buf(lines, ft)
  local width = 20
  for _, l in ipairs(lines) do
    width = math.max(width, vim.fn.strdisplaywidth(l))
  end
  width = math.min(width + 2, math.floor(vim.o.columns * 0.8))
  local height = math.min(#lines, math.floor(vim.o.lines * 0.7))
  local win = vim.api.nvim_open_win(buf, true, {
    relative = "editor",
    width = math.max(width, 1),
    height = math.max(height, 1),
    row = math.floor((vim.o.lines - height) / 2) - 1,
    col = math.floor((vim.o.columns - width) / 2),
    border = "rounded",
    title = title and (" " .. title .. " ") or nil,
    title_pos = title and "center" or nil,
    style = "minimal",
  })
  vim.wo[win].wrap = true
  for _, key in ipairs({ "q", "<Esc>" }) do
    vim.keymap.set("n", key, function()
      if vim.api.nvim_win_is_valid(win) then
        vim.api.nvim_win_close(win, true)
      end
    end, { buffer = buf, nowait = true, desc = "Close" })
  end
  return buf, win
end

--- The window long output belongs in: the widest window of the tab that is
--- neither floating nor of fixed width (a sidebar keeps its width fixed).
function M.main_window()
  local best, best_width = nil, -1
  for _, win in ipairs(vim.api.nvim_tabpage_list_wins(0)) do
    local cfg = vim.api.nvim_win_get_config(win)
    if cfg.relative == "" and not vim.wo[win].winfixwidth then
      local width = vim.api.nvim_win_get_width(win)
      if width > best_width then
        best, best_width = win, width
      end
    end
  end
  return best
end

--- Text in a scratch buffer shown in the main window (for long output such as
--- contexts); a split of its own only when every window is a sidebar. `q`
--- goes back to what the window showed before.
function M.scratch(lines, ft, name)
  local win = M.main_window()
  if win then
    vim.api.nvim_set_current_win(win)
  else
    vim.cmd("botright new")
  end
  local buf = scratch_buf(lines, ft, name)
  local old = vim.api.nvim_get_current_buf()
  vim.api.nvim_win_set_buf(0, buf)
  local replaced_empty = old ~= buf and vim.api.nvim_buf_is_valid(old) and vim.bo[old].buftype == ""
    and vim.api.nvim_buf_get_name(old) == "" and not vim.bo[old].modified
  if replaced_empty then
    pcall(vim.api.nvim_buf_delete, old, { force = true })
  end
  vim.keymap.set("n", "q", function()
    local back = vim.fn.bufnr("#")
    if back > 0 and back ~= buf and vim.api.nvim_buf_is_valid(back) and vim.bo[back].buflisted then
      vim.api.nvim_win_set_buf(0, back)
    elseif #vim.api.nvim_tabpage_list_wins(0) > 1 and not win then
      vim.cmd("close")
    else
      vim.cmd("enew")
    end
  end, { buffer = buf, nowait = true, desc = "Back" })
  return buf
end

--- Put text into the unnamed register, and the clipboard when there is one.
function M.set_register(text)
  vim.fn.setreg('"', text)
  if vim.fn.has("clipboard") == 1 then
    pcall(vim.fn.setreg, "+", text)
  end
end

function M.info(msg)
  vim.notify("pi-sessions: " .. msg, vim.log.levels.INFO)
end

return M
