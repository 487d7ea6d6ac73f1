-- Options: defaults merged with what the user passes to setup().
local M = {}

local FILTERS = { "default", "no-tools", "user-only", "labeled-only", "all" }
M.filters = FILTERS

--- What runs the server when `cmd` is not set: pi-server on PATH first.
function M.default_cmd()
  if vim.fn.executable("pi-server") == 1 then
    return { "pi-server" }
  end
  return { "python3", "-m", "pi_server" }
end

--- The folders pi writes sessions to, as the server resolves them by default.
function M.default_sessions_dirs()
  local agent = vim.env.PI_CODING_AGENT_DIR
  if agent and agent ~= "" then
    return { vim.fs.joinpath(agent, "sessions") }
  end
  return { vim.fs.joinpath(vim.env.HOME or "~", ".pi", "agent", "sessions") }
end

M.defaults = {
  cmd = nil, -- resolved lazily so PATH changes after setup() still count
  cmd_env = nil, -- extra environment for the server process
  sessions_dirs = nil, -- nil: the server's default (~/.pi/agent/sessions)
  state_dir = nil, -- nil: the server's default state folder
  server_options = nil, -- more initializationOptions for the server (e.g. compaction budgets)
  filter = "default",
  context_format = "agent",
  page_size = 500, -- rows fetched per pi/getTree window
  sidebar = { width = 60, position = "left" },
  attach_jsonl = true, -- attach the client to session files for outline/diagnostics
  -- key -> action name (see :help pi_sessions-actions); false drops a key
  keymaps = {
    ["<CR>"] = "switch",
    s = "summarize",
    L = "label",
    f = "filter",
    ["/"] = "search",
    za = "fold",
    K = "entry",
    o = "omit",
    O = "restore",
    S = "system",
    y = "yank",
    Y = "yank_format",
    r = "refresh",
    q = "close",
  },
}

M.options = vim.deepcopy(M.defaults)

function M.set(opts)
  M.options = vim.tbl_deep_extend("force", vim.deepcopy(M.defaults), opts or {})
  if type(M.options.sessions_dirs) == "string" then
    M.options.sessions_dirs = { M.options.sessions_dirs }
  end
  return M.options
end

function M.cmd()
  local cmd = M.options.cmd or M.default_cmd()
  if type(cmd) == "string" then
    cmd = vim.split(cmd, "%s+", { trimempty = true })
  end
  return cmd
end

--- Session roots to match .jsonl buffers against.
function M.roots()
  local dirs = M.options.sessions_dirs or M.default_sessions_dirs()
  local out = {}
  for _, d in ipairs(dirs) do
    local p = vim.fs.normalize(vim.fn.fnamemodify(d, ":p"))
    table.insert(out, (p:gsub("/$", "")))
  end
  return out
end

return M
