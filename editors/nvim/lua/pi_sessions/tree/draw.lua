-- Putting a sidebar's header and rows into its buffer: lines from render.lua
-- set in one call, then their highlights as extmarks in one namespace.
local render = require("pi_sessions.render")
local HEADER = require("pi_sessions.tree.sidebar").HEADER

local M = {}

M.ns = vim.api.nvim_create_namespace("pi_sessions_tree")

local function set_lines(sb, first, last, lines)
  vim.bo[sb.buf].modifiable = true
  vim.api.nvim_buf_set_lines(sb.buf, first, last, false, lines)
  vim.bo[sb.buf].modifiable = false
end

function M.header(sb)
  local stats = sb.stats and require("pi_sessions.stats").short(sb.stats.branch) or nil
  local line = render.header(sb.name, sb.filter, sb.search, sb.total, stats, sb.live)
  set_lines(sb, 0, HEADER, { line })
  vim.api.nvim_buf_clear_namespace(sb.buf, M.ns, 0, HEADER)
  vim.api.nvim_buf_set_extmark(sb.buf, M.ns, 0, 0, { end_row = 0, end_col = #line, hl_group = "PiTreeHeader" })
end

--- Draw rows [from, from + #rows) into their lines, with highlights.
function M.rows(sb, from, rows)
  local lines, hls = {}, {}
  for i, row in ipairs(rows) do
    lines[i], hls[i] = render.row(row)
  end
  local first = HEADER + from
  set_lines(sb, first, first + #rows, lines)
  vim.api.nvim_buf_clear_namespace(sb.buf, M.ns, first, first + #rows)
  for i, h in ipairs(hls) do
    for _, span in ipairs(h) do
      vim.api.nvim_buf_set_extmark(sb.buf, M.ns, first + i - 1, span[2], { end_col = span[3], hl_group = span[1] })
    end
  end
end

--- Replace the whole buffer with the header and one placeholder per row.
function M.reset(sb, total)
  local lines = { "" }
  for i = 1, total do
    lines[i + 1] = render.PLACEHOLDER
  end
  set_lines(sb, 0, -1, lines)
  vim.api.nvim_buf_clear_namespace(sb.buf, M.ns, 0, -1)
  vim.api.nvim_buf_clear_namespace(sb.buf, require("pi_sessions.tree.edits").ns, 0, -1)
  M.header(sb)
end

return M
