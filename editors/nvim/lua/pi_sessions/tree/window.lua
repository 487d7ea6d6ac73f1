-- The sidebar's scratch buffer and its window: a `nofile` buffer that is
-- never modifiable by hand, in a fixed-width split without numbers or wrap.
local config = require("pi_sessions.config")

local M = {}

--- A new scratch buffer for the sidebar of `tab` (filetype pi_tree).
function M.create_buffer(tab)
  local buf = vim.api.nvim_create_buf(false, true)
  vim.bo[buf].buftype = "nofile"
  vim.bo[buf].bufhidden = "hide"
  vim.bo[buf].swapfile = false
  vim.bo[buf].modifiable = false
  -- buffer names are unique: the first sidebar is "pi-tree", others name their tab
  if not pcall(vim.api.nvim_buf_set_name, buf, "pi-tree") then
    pcall(vim.api.nvim_buf_set_name, buf, "pi-tree-" .. vim.api.nvim_tabpage_get_number(tab))
  end
  vim.bo[buf].filetype = "pi_tree"
  return buf
end

--- Focus the sidebar's window, splitting one off in the current tab if needed.
function M.open(sb)
  local win = sb:win()
  if win then
    vim.api.nvim_set_current_win(win)
    return win
  end
  local opts = config.options.sidebar or {}
  vim.cmd((opts.position == "right" and "botright" or "topleft") .. " vertical " .. (opts.width or 60) .. "split")
  win = vim.api.nvim_get_current_win()
  vim.api.nvim_win_set_buf(win, sb.buf)
  local wo = vim.wo[win]
  wo.number, wo.relativenumber, wo.wrap, wo.cursorline = false, false, false, true
  wo.signcolumn, wo.foldcolumn, wo.spell, wo.list = "no", "0", false, false
  wo.winfixwidth = true
  return win
end

--- Close the sidebar's window and wipe its buffer.
function M.close(sb)
  local win = sb:win()
  if win then
    if #vim.api.nvim_tabpage_list_wins(sb.tab) == 1 then
      vim.api.nvim_win_call(win, function()
        vim.cmd("enew")
      end)
    else
      vim.api.nvim_win_close(win, true)
    end
  end
  if sb:is_open() then
    pcall(vim.api.nvim_buf_delete, sb.buf, { force = true })
  end
end

return M
