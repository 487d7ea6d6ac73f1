-- The one LSP client ("pi_sessions") that talks to pi-server: starting it on
-- first use, queueing requests until `initialize` has answered, turning
-- JSON-RPC errors into messages, and fanning out server notifications.
local config = require("pi_sessions.config")

local M = {}

local state = {
  id = nil, -- client id while the process lives
  ready = false, -- initialize answered
  queue = {}, -- requests waiting for `ready`
  pending = {}, -- in-flight request callbacks, failed if the process dies
  seq = 0,
  server_info = nil,
}
local listeners = {} -- method -> { fn, ... }

M.NAME = "pi_sessions"

local function notify_error(msg)
  vim.schedule(function()
    vim.notify("pi-sessions: " .. msg, vim.log.levels.ERROR)
  end)
end
M.notify_error = notify_error

--- Subscribe to a server notification (pi/sessionUpdated, pi/sessionsChanged, pi/savePoint).
--- Returns a function that unsubscribes.
function M.on(method, fn)
  listeners[method] = listeners[method] or {}
  table.insert(listeners[method], fn)
  return function()
    for i, f in ipairs(listeners[method] or {}) do
      if f == fn then
        table.remove(listeners[method], i)
        return
      end
    end
  end
end

--- How many subscribers `method` has (the sidebars subscribe while open).
function M.listener_count(method)
  return #(listeners[method] or {})
end

local function emit(method, params)
  for _, fn in ipairs(vim.list_extend({}, listeners[method] or {})) do
    local ok, err = pcall(fn, params)
    if not ok then
      notify_error(method .. " handler failed: " .. tostring(err))
    end
  end
end

local function handlers()
  local h = {}
  for _, m in ipairs({ "pi/sessionUpdated", "pi/sessionsChanged", "pi/savePoint", "pi/agentEvent" }) do
    h[m] = function(_, params)
      emit(m, params or {})
    end
  end
  return h
end

local function fail_all(msg)
  local queue, pending = state.queue, state.pending
  state.queue, state.pending = {}, {}
  for _, q in ipairs(queue) do
    q.cb(msg, nil)
  end
  for _, cb in pairs(pending) do
    cb(msg, nil)
  end
end

local function get_client()
  if not state.id then
    return nil
  end
  return vim.lsp.get_client_by_id(state.id)
end

local function send(method, params, cb)
  -- an empty Lua table would be encoded as [], and the server wants an object
  if type(params) == "table" and next(params) == nil then
    params = vim.empty_dict()
  end
  local client = get_client()
  if not client then
    return cb("pi-server is not running", nil)
  end
  state.seq = state.seq + 1
  local key = state.seq
  state.pending[key] = cb
  local function handler(err, result)
    if not state.pending[key] then
      return -- already failed by on_exit
    end
    state.pending[key] = nil
    if err then
      cb(err.message or vim.inspect(err), nil, err)
    else
      cb(nil, result)
    end
  end
  local ok
  if vim.fn.has("nvim-0.11") == 1 then
    ok = client:request(method, params, handler, 0)
  else
    ok = client.request(method, params, handler, 0)
  end
  if not ok then
    state.pending[key] = nil
    cb("could not send " .. method .. " (server stopped?)", nil)
  end
end

--- The server died before answering: its stderr went to the LSP log, so
--- ask `cmd --version` what is wrong and show that too (an import error,
--- a broken install).
function M.explain_failure(cmd, env)
  local argv = vim.list_extend(vim.deepcopy(cmd), { "--version" })
  local ok = pcall(vim.system, argv, { text = true, env = env }, function(r)
    local out = vim.trim(r.stderr or "")
    if r.code ~= 0 and out ~= "" then
      local lines = vim.split(out, "\n", { plain = true })
      notify_error(("`%s --version` says: %s"):format(table.concat(cmd, " "), lines[#lines]))
    end
  end)
  return ok
end

--- Start the server if it is not running. Returns false (with a message
--- shown) when the command cannot be found, so callers never wait forever.
function M.ensure()
  if get_client() then
    return true
  end
  local cmd = config.cmd()
  if not cmd[1] or vim.fn.executable(cmd[1]) ~= 1 then
    notify_error(
      ("server command not found: %q (set `cmd` in setup(), see :checkhealth pi_sessions)"):format(
        table.concat(cmd, " ")
      )
    )
    return false
  end
  local opts = config.options
  local init_options = vim.deepcopy(opts.server_options or {})
  if opts.sessions_dirs then
    init_options.sessionDirs = config.roots()
  end
  if opts.state_dir then
    init_options.stateDir = vim.fs.normalize(vim.fn.fnamemodify(opts.state_dir, ":p"))
  end
  if next(init_options) == nil then
    init_options = vim.empty_dict()
  end
  local root = config.roots()[1]
  if not root or vim.fn.isdirectory(root) ~= 1 then
    root = vim.fn.getcwd()
  end
  state.ready = false
  -- a stop asked for earlier ended that client, not this one
  M._stopping = false
  local client_config = {
    name = M.NAME,
    cmd = cmd,
    cmd_env = opts.cmd_env,
    root_dir = root,
    init_options = init_options,
    handlers = handlers(),
    on_init = function(client, result)
      state.server_info = result and result.serverInfo
      state.ready = true
      local queue = state.queue
      state.queue = {}
      for _, q in ipairs(queue) do
        send(q.method, q.params, q.cb)
      end
    end,
    on_exit = function(code, signal, client_id)
      if client_id ~= state.id then
        return
      end
      local was_ready = state.ready
      state.id, state.ready = nil, false
      if code ~= 0 or not was_ready then
        local msg = ("pi-server exited (code %s%s)%s"):format(
          tostring(code),
          signal ~= 0 and (", signal " .. signal) or "",
          was_ready and "" or " before it answered; check `cmd` with :checkhealth pi_sessions"
        )
        fail_all(msg)
        if not M._stopping then
          notify_error(msg)
          if not was_ready then
            M.explain_failure(cmd, opts.cmd_env)
          end
        end
      else
        fail_all("pi-server stopped")
      end
      M._stopping = false
    end,
  }
  local ok, id
  if vim.fn.has("nvim-0.11") == 1 then
    ok, id = pcall(vim.lsp.start, client_config, { attach = false, reuse_client = function() return false end })
  else
    ok, id = pcall(vim.lsp.start_client, client_config)
  end
  if not ok or not id then
    notify_error("could not start pi-server: " .. tostring(id))
    return false
  end
  state.id = id
  return true
end

--- Send a request. `cb(err, result)`: err is the server's message (a string)
--- or nil. Without `opts.quiet`, errors are also shown with vim.notify.
function M.request(method, params, cb, opts)
  opts = opts or {}
  cb = cb or function() end
  local function done(err, result, raw)
    vim.schedule(function()
      -- a stop asked for by the user is not worth an error message
      if err and not opts.quiet and err ~= "pi-server stopped" then
        vim.notify("pi-sessions: " .. method .. ": " .. err, vim.log.levels.ERROR)
      end
      cb(err, result, raw)
    end)
  end
  if not M.ensure() then
    return done("pi-server is not available", nil)
  end
  if state.ready then
    send(method, params, done)
  else
    table.insert(state.queue, { method = method, params = params, cb = done })
  end
end

--- Blocking variant for health checks and tests (waits with vim.wait).
function M.request_sync(method, params, timeout_ms)
  local done, err, result = false, nil, nil
  M.request(method, params, function(e, r)
    done, err, result = true, e, r
  end, { quiet = true })
  if not vim.wait(timeout_ms or 10000, function() return done end, 10) then
    return nil, "timed out waiting for " .. method
  end
  return result, err
end

function M.attach(buf)
  if not M.ensure() then
    return false
  end
  return vim.lsp.buf_attach_client(buf, state.id)
end

function M.is_running()
  return get_client() ~= nil
end

function M.is_ready()
  return state.ready and get_client() ~= nil
end

function M.client_id()
  return state.id
end

function M.server_info()
  return state.server_info
end

function M.stop()
  local client = get_client()
  if client then
    M._stopping = true
    if vim.fn.has("nvim-0.11") == 1 then
      client:stop(true)
    else
      client.stop(true)
    end
  end
  state.id, state.ready = nil, false
  fail_all("pi-server stopped")
end

return M
