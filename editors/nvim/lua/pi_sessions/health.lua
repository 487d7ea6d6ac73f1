-- :checkhealth pi_sessions
local M = {}

local function run(cmd, timeout)
  local ok, obj = pcall(function()
    return vim.system(cmd, { text = true }):wait(timeout or 10000)
  end)
  if not ok then
    return nil, tostring(obj)
  end
  return obj
end

--- The `*.jsonl` files under `dir` found as the server finds them: at any
--- depth, hidden folders skipped, symlinked folders not followed.
function M.count_session_files(dir)
  local n = 0
  local skip = function(rel) -- a folder's path relative to `dir`: descend unless it is hidden
    return vim.fs.basename(rel):sub(1, 1) ~= "."
  end
  for name, kind in vim.fs.dir(dir, { depth = math.huge, skip = skip }) do
    if name:match("%.jsonl$") and (kind == "file" or (kind == "link" and vim.fn.isdirectory(vim.fs.joinpath(dir, name)) == 0)) then
      n = n + 1
    end
  end
  return n
end

-- Every sidebar key must name an action (see :help pi_sessions-actions).
function M.check_keymaps(health, config)
  health.start("pi_sessions: sidebar keys")
  local actions = require("pi_sessions.tree.actions")
  local resolved = require("pi_sessions.tree.keymaps").resolve(config.options.keymaps)
  local count, bad = 0, {}
  for lhs, name in pairs(resolved) do
    count = count + 1
    if type(actions[name]) ~= "table" then
      table.insert(bad, ("%s -> %s"):format(lhs, tostring(name)))
    end
  end
  if #bad == 0 then
    health.ok(("%d keys, each mapped to an action"):format(count))
  else
    table.sort(bad)
    health.error("keys mapped to no action: " .. table.concat(bad, ", "), {
      "See :help pi_sessions-actions for the action names",
    })
  end
end

function M.check()
  local health = vim.health
  local config = require("pi_sessions.config")
  local client = require("pi_sessions.client")

  health.start("pi_sessions: Neovim")
  if vim.fn.has("nvim-0.10") == 1 then
    health.ok("Neovim " .. tostring(vim.version()))
  else
    health.error("Neovim 0.10 or newer is required")
  end

  health.start("pi_sessions: server command")
  local cmd = config.cmd()
  local shown = table.concat(cmd, " ")
  if not cmd[1] or vim.fn.executable(cmd[1]) ~= 1 then
    health.error(("`%s` not found"):format(shown), {
      "Install the server: pipx install /path/to/pi-server (Debian/Ubuntu: sudo apt install pipx)",
      "or set `cmd` in require('pi_sessions').setup({ cmd = { ... } })",
    })
  else
    health.ok(("`%s` found (%s)"):format(shown, vim.fn.exepath(cmd[1])))
    -- `pi-server --version` exists; `python -m pi_server --version` is the same CLI
    local obj, err = run(vim.list_extend(vim.deepcopy(cmd), { "--version" }))
    if obj and obj.code == 0 then
      health.ok("version: " .. vim.trim(obj.stdout ~= "" and obj.stdout or obj.stderr))
    else
      local help = run(vim.list_extend(vim.deepcopy(cmd), { "--help" }))
      if help and help.code == 0 then
        health.warn("the server does not report a version, but `--help` works")
      else
        health.error(("`%s --version` failed: %s"):format(shown, vim.trim((obj and (obj.stderr ~= "" and obj.stderr or obj.stdout)) or err or "?")))
      end
    end
  end

  if client.is_ready() then
    local info = client.server_info()
    if info then
      health.ok(("running client: %s %s"):format(info.name or "?", info.version or ""))
    else
      health.ok("the client is running")
    end
  else
    health.info("the client starts on the first :PiSessions / :PiTree")
  end

  health.start("pi_sessions: session folders")
  for _, dir in ipairs(config.roots()) do
    if vim.fn.isdirectory(dir) == 1 then
      health.ok(("%s exists (%d session files)"):format(dir, M.count_session_files(dir)))
    else
      health.warn(dir .. " does not exist", { "Run pi once, or set `sessions_dirs` in setup()" })
    end
  end
  M.check_keymaps(health, config)

  local state = config.options.state_dir
  if state then
    if vim.fn.isdirectory(state) == 1 or vim.fn.isdirectory(vim.fn.fnamemodify(state, ":h")) == 1 then
      health.ok("state dir: " .. state)
    else
      health.warn("state dir's parent does not exist: " .. state)
    end
  end
end

return M
