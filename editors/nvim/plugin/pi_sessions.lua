-- Commands exist before setup() so the plugin works with defaults; setup()
-- only changes options (and is safe to call again).
if vim.g.loaded_pi_sessions then
  return
end
vim.g.loaded_pi_sessions = true
if vim.fn.has("nvim-0.10") ~= 1 then
  vim.notify("pi-sessions needs Neovim 0.10 or newer", vim.log.levels.WARN)
  return
end
local pi = require("pi_sessions")
pi.define_highlights()
pi.create_commands()
