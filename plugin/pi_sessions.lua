-- pi-server's Neovim plugin lives in editors/nvim. A plugin manager given this
-- repository (lazy.nvim, packer, vim.pack, or a package under pack/*/start)
-- puts the repository's root on 'runtimepath' and sources this file: it adds
-- editors/nvim there (with its help tags) and loads the plugin from it.
local root = vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h:h")
local dir = root .. "/editors/nvim"
if not vim.tbl_contains(vim.opt.runtimepath:get(), dir) then
  vim.opt.runtimepath:append(dir)
end
if vim.fn.filereadable(dir .. "/doc/tags") == 0 then
  pcall(vim.cmd, "helptags " .. vim.fn.fnameescape(dir .. "/doc"))
end
dofile(dir .. "/plugin/pi_sessions.lua")
