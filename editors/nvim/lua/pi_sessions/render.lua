-- Pure drawing: a pi/getTree row -> the line pi's /tree shows, plus the
-- highlight spans for it. No Neovim state, so it is unit-testable.
local M = {}

--- A `sharedGutters` answer back in the per-row form (docs/protocol.md, pi/getTree):
--- each node's list is its `up`'s plus itself (an `up` comes before its nodes), built
--- once and shared by the rows that use it. Returns the result, changed in place.
function M.expand_gutters(result)
  local nodes = result and result.gutterNodes
  if type(nodes) ~= "table" then
    return result
  end
  local lists = {} -- 0-based node index -> its gutters, outermost first
  for i, n in ipairs(nodes) do
    local list = {}
    for k, g in ipairs(lists[n[3]] or {}) do
      list[k] = g
    end
    list[#list + 1] = { position = n[1], show = n[2] }
    lists[i - 1] = list
  end
  for _, row in ipairs(result.rows or {}) do
    row.gutters = lists[row.gutter] or {}
    row.gutter = nil
  end
  result.gutterNodes = nil
  return result
end

--- Gutters, connector and fold mark before a row (docs/protocol.md, pi/getTree).
function M.prefix(row)
  local gut = {}
  for _, g in ipairs(row.gutters or {}) do
    gut[g.position] = g.show
  end
  local parts = {}
  local indent = row.indent or 0
  local connector = row.connector or ""
  for level = 0, indent - 1 do
    local g = gut[level]
    if g ~= nil then
      parts[#parts + 1] = g and "│  " or "   "
    elseif connector ~= "" and level == indent - 1 then
      -- connector is "├─"/"└─": keep its first character, then pi's fold mark
      local first = vim.fn.strcharpart(connector, 0, 1)
      local mark = row.folded and "⊞" or (row.foldable and "⊟" or "─")
      parts[#parts + 1] = first .. mark .. " "
    else
      parts[#parts + 1] = "   "
    end
  end
  if row.folded and connector == "" then
    parts[#parts + 1] = "⊞ "
  end
  return table.concat(parts)
end

--- Tool rows (results and `[read: …]`-style calls) are the ones pi dims.
function M.is_tool(row)
  if row.type ~= "message" then
    return false
  end
  if row.role == "toolResult" or row.role == "bashExecution" then
    return true
  end
  return row.role == "assistant" and (row.title or ""):match("^%[[%w_%-]+:") ~= nil
end

--- One row -> line, highlights ({ group, col_start, col_end } in bytes).
function M.row(row)
  local prefix = M.prefix(row)
  local hls = {}
  local line = prefix
  if #prefix > 0 then
    hls[#hls + 1] = { "PiTreeGutter", 0, #prefix }
  end
  if row.onActivePath then
    local s = #line
    line = line .. "• "
    hls[#hls + 1] = { row.isLeaf and "PiTreeLeaf" or "PiTreeActive", s, #line }
  end
  if row.label and row.label ~= "" then
    local s = #line
    line = line .. "[" .. row.label .. "] "
    hls[#hls + 1] = { "PiTreeLabel", s, #line - 1 }
  end
  local title = (row.title or ""):gsub("\n", " ")
  local s = #line
  line = line .. title
  local group
  if row.isLeaf then
    group = "PiTreeLeaf"
  elseif M.is_tool(row) then
    group = "PiTreeTool"
  elseif row.onActivePath then
    group = "PiTreeActive"
  elseif row.role == "user" then
    group = "PiTreeUser"
  elseif row.type ~= "message" then
    group = "PiTreeMeta"
  end
  if group and #line > s then
    hls[#hls + 1] = { group, s, #line }
  end
  return line, hls
end

--- The mark of a session that a running pi holds (docs/protocol.md, live
--- sessions): `● live in pi · pid 123 · streaming`; nil for none (nil or
--- vim.NIL, as a notification's null decodes).
function M.live(live)
  if type(live) ~= "table" then
    return nil
  end
  return ("● live in pi · pid %s · %s"):format(tostring(live.pid), live.streaming == true and "streaming" or "idle")
end

--- Header shown above the rows.
function M.header(name, filter, search, total, stats, live)
  local parts = { name or "session" }
  if M.live(live) then
    parts[#parts + 1] = M.live(live)
  end
  parts[#parts + 1] = "filter: " .. (filter or "default")
  if search and search ~= "" then
    parts[#parts + 1] = "search: " .. search
  end
  if stats and stats ~= "" then
    parts[#parts + 1] = stats
  end
  if total then
    parts[#parts + 1] = total .. (total == 1 and " row" or " rows")
  end
  return table.concat(parts, " │ ")
end

--- Placeholder for a row not fetched yet (lazy windows).
M.PLACEHOLDER = "…"

return M
