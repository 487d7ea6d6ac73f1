-- Keys of the sidebar: `keymaps` maps each key to the name of an action in
-- actions.lua (false drops a key), and every mapping carries the action's desc.
local actions = require("pi_sessions.tree.actions")
local config = require("pi_sessions.config")

local M = {}

--- key -> action name, from the merged `keymaps` option. An entry written the
--- old way round (`label = "L"`, action = key) still works: it moves that
--- action to the key it names (or drops it when false).
function M.resolve(km)
  local out, moved = {}, {}
  for k, v in pairs(km or {}) do
    if type(actions[k]) == "table" then
      moved[k] = v
    elseif v then
      out[k] = v
    end
  end
  for name, lhs in pairs(moved) do
    for k, v in pairs(out) do
      if v == name then
        out[k] = nil
      end
    end
    if type(lhs) == "string" and lhs ~= "" then
      out[lhs] = name
    end
  end
  return out
end

--- Map the keys in `buf`; `get_sidebar()` gives the sidebar they act on.
function M.apply(buf, get_sidebar)
  for lhs, name in pairs(M.resolve(config.options.keymaps)) do
    local action = actions[name]
    if type(action) == "table" and action.callback then
      vim.keymap.set("n", lhs, function()
        actions.run(name, get_sidebar())
      end, { buffer = buf, nowait = true, silent = true, desc = "pi: " .. action.desc })
    else
      vim.notify(("pi-sessions: keymaps: %s maps to %s, which is no action"):format(lhs, tostring(name)), vim.log.levels.WARN)
    end
  end
end

return M
