-- Shared test helpers: a fresh copy of the sample sessions and a real server
-- per test, the CLI as the reference, key presses, and waiting.
local H = {}

local deadline = math.huge
local notes = {}

function H.now_ms()
  return vim.uv.hrtime() / 1e6
end

-- $PI_SERVER_CMD as a command list, or nil.
local function cmd_override()
  local env = os.getenv("PI_SERVER_CMD")
  if env and env ~= "" then
    return vim.split(env, "%s+", { trimempty = true })
  end
end

--- Server command: $PI_SERVER_CMD, else what the plugin starts by default
--- (`pi-server` when it is on PATH, else `python3 -m pi_server`).
function H.server_cmd()
  return cmd_override() or require("pi_sessions.config").default_cmd()
end

local function last_lines(text, n)
  local lines = vim.split(vim.trim(text or ""), "\n", { plain = true })
  return table.concat(vim.list_slice(lines, math.max(1, #lines - n + 1)), "\n")
end

--- Can the server start, the way the tests will start it? nil when it
--- answers `--version` and an LSP request through the plugin, else why not.
function H.preflight()
  local cmd = H.server_cmd()
  local shown = table.concat(cmd, " ")
  if not cmd[1] or vim.fn.executable(cmd[1]) ~= 1 then
    return ("`%s` is not an executable on PATH (PATH=%s)"):format(shown, vim.env.PATH or "")
  end
  local where = ("`%s` (%s)"):format(shown, vim.fn.exepath(cmd[1]))
  local ok, r = pcall(function()
    return vim.system(vim.list_extend(vim.deepcopy(cmd), { "--version" }), { text = true }):wait(20000)
  end)
  if not ok then
    return where .. " could not be run: " .. tostring(r)
  elseif r.code ~= 0 then
    return ("%s --version exited with %s:\n%s"):format(where, tostring(r.code), last_lines(r.stderr ~= "" and r.stderr or r.stdout, 5))
  end
  H.before(30000)
  local _, err = require("pi_sessions.client").request_sync("pi/listSessions", {}, 25000)
  local errors = H.errors()
  pcall(H.after)
  if err then
    -- the LSP client keeps the server's stderr to its log: run it once more
    -- on an empty stdin to show what it says
    local again = vim.system(cmd, { text = true, stdin = "" }):wait(10000)
    return ("%s did not answer pi/listSessions: %s%s\nits stderr:\n%s"):format(
      where, err, #errors > 0 and ("\n" .. table.concat(errors, "\n")) or "", last_lines(again.stderr, 5))
  end
end

function H.before(timeout)
  deadline = H.now_ms() + timeout
  notes = {}
  H.orig_select, H.orig_input, H.orig_notify = vim.ui.select, vim.ui.input, vim.notify
  vim.notify = function(msg, level)
    table.insert(notes, { msg = msg, level = level })
  end
  local root = vim.fn.tempname()
  H.root = root
  H.sessions = root .. "/sessions"
  H.state = root .. "/state"
  H.home = root .. "/home"
  for _, d in ipairs({ H.sessions, H.state, H.home }) do
    vim.fn.mkdir(d, "p")
  end
  local samples = vim.fs.normalize(H.plugin_dir .. "/../../pi_server/samples")
  assert(vim.fn.isdirectory(samples) == 1, "samples not found at " .. samples)
  local r = vim.system({ "cp", "-r", samples .. "/.", H.sessions }):wait()
  assert(r.code == 0, "cp failed")
  vim.env.ANTHROPIC_API_KEY = nil
  vim.env.PI_CODING_AGENT_DIR = nil
  H.setup({})
end

--- (Re)configure the plugin for this test's folders.
function H.setup(extra)
  require("pi_sessions").setup(vim.tbl_deep_extend("force", {
    cmd = cmd_override(), -- nil: the plugin's own default
    cmd_env = { HOME = H.home, ANTHROPIC_API_KEY = "" },
    sessions_dirs = { H.sessions },
    state_dir = H.state,
  }, extra or {}))
end

function H.after()
  vim.ui.select, vim.ui.input, vim.notify = H.orig_select, H.orig_input, H.orig_notify
  local tree = require("pi_sessions.tree")
  pcall(tree.close_all)
  local client = require("pi_sessions.client")
  local id = client.client_id()
  client.stop()
  if id then
    vim.wait(3000, function()
      return vim.lsp.get_client_by_id(id) == nil
    end, 20)
  end
  vim.cmd("silent! tabonly!")
  vim.cmd("silent! only")
  vim.cmd("silent! %bwipeout!")
  if H.root then
    vim.fn.delete(H.root, "rf")
  end
end

-- Messages saying the server could not start or died: waiting on after
-- one of them only wastes the test's time.
local FATAL = { "pi-server exited", "server command not found", "could not start pi-server" }

local function fatal_since(first)
  for i = first, #notes do
    for _, pat in ipairs(FATAL) do
      if notes[i].level == vim.log.levels.ERROR and notes[i].msg:find(pat, 1, true) then
        return notes[i].msg
      end
    end
  end
end

--- Wait for cond(); fails the test after ms (or at the test's deadline), or
--- at once, with the plugin's message, when the server dies meanwhile.
function H.wait(cond, what, ms)
  local limit = math.min(deadline, H.now_ms() + (ms or 10000))
  local first, met, fatal = #notes + 1, false, nil
  vim.wait(math.max(0, limit - H.now_ms()), function()
    met = cond() and true or false
    fatal = not met and fatal_since(first) or nil
    return met or fatal ~= nil
  end, 10)
  if fatal then
    error(("the server failed while waiting for %s: %s"):format(what or "condition", fatal), 2)
  elseif not met then
    error("timed out waiting for " .. (what or "condition"), 2)
  end
end

function H.notes()
  return notes
end

function H.errors()
  local out = {}
  for _, n in ipairs(notes) do
    if n.level == vim.log.levels.ERROR then
      out[#out + 1] = n.msg
    end
  end
  return out
end

function H.eq(expected, actual, what)
  if not vim.deep_equal(expected, actual) then
    error(("%s\nexpected: %s\n  actual: %s"):format(what or "not equal", vim.inspect(expected), vim.inspect(actual)), 2)
  end
end

function H.truthy(v, what)
  if not v then
    error(what or "expected a true value", 2)
  end
  return v
end

--- The big sample: branches, a compaction, a branch summary and labels.
function H.shop()
  return vim.fn.glob(H.sessions .. "/--home-demo-shop--/2026-11-30T09-00-00*.jsonl")
end

--- Run the CLI; returns stdout (asserting exit 0).
function H.cli(args)
  local cmd = vim.list_extend(vim.deepcopy(H.server_cmd()), args)
  local r = vim.system(cmd, { text = true, env = { HOME = H.home, ANTHROPIC_API_KEY = "" } }):wait(20000)
  assert(r.code == 0, ("%s failed (%s): %s"):format(table.concat(cmd, " "), tostring(r.code), r.stderr or ""))
  return r.stdout
end

--- `pi-server tree FILE ARGS...` rows, without the trailing "(n of n rows …)" line.
function H.cli_tree(file, args)
  local out = H.cli(vim.list_extend({ "tree", file, "--sessions-dir", H.sessions }, args or {}))
  local lines = vim.split(out, "\n", { plain = true })
  while #lines > 0 and (lines[#lines] == "" or lines[#lines]:match("^%(%d+ of %d+ rows?")) do
    table.remove(lines)
  end
  return lines
end

--- The row the cursor should land on: the leaf, or the last row of the
--- active path when the filter hides the leaf.
function H.expected_cursor_id(file, args)
  local out = H.cli(vim.list_extend({ "tree", file, "--json" }, args or {}))
  local result = vim.json.decode(out, { luanil = { object = true } })
  local last
  for _, row in ipairs(result.rows) do
    if row.isLeaf then
      return row.id
    end
    if row.onActivePath then
      last = row.id
    end
  end
  return last
end

function H.request(method, params)
  local result, err = require("pi_sessions.client").request_sync(method, params, 15000)
  assert(not err, method .. " failed: " .. tostring(err))
  return result
end

local function tree()
  return require("pi_sessions.tree")
end

function H.idle()
  H.wait(function()
    return tree().is_idle()
  end, "the sidebar to settle")
end

--- Open the sidebar on `file` and wait until its rows are drawn.
function H.open(file)
  vim.cmd("PiTree " .. vim.fn.fnameescape(file))
  H.wait(function()
    return tree().is_open() and tree().state.total > 0 and tree().is_idle()
  end, "the tree to load")
  vim.api.nvim_set_current_win(tree().win())
end

--- The sidebar's row lines (without the header).
function H.lines()
  local buf = tree().state.buf
  local lines = vim.api.nvim_buf_get_lines(buf, 1, -1, false)
  return lines
end

--- Press keys in the sidebar as a user would (mappings applied).
function H.press(keys)
  local win = tree().win()
  if win then
    vim.api.nvim_set_current_win(win)
  end
  vim.api.nvim_feedkeys(vim.keycode(keys), "mx", false)
end

--- Put the cursor on the row with this id (row must be loaded).
function H.cursor_to(id)
  local S = tree().state
  for i, row in pairs(S.rows) do
    if row.id == id then
      vim.api.nvim_win_set_cursor(tree().win(), { i + 2, 0 })
      return row
    end
  end
  error("row " .. id .. " is not loaded")
end

function H.row_where(pred)
  local S = tree().state
  local best
  for i, row in pairs(S.rows) do
    if pred(row) and (not best or i < best[1]) then
      best = { i, row }
    end
  end
  return best and best[2]
end

function H.cursor_row()
  return tree().current_row()
end

--- Answer the next vim.ui.select with the item for which pick(item, text) is true.
function H.answer_select(pick)
  vim.ui.select = function(items, opts, on_choice)
    for i, item in ipairs(items) do
      local text = opts.format_item and opts.format_item(item) or tostring(item)
      if pick(item, text, i) then
        return on_choice(item, i)
      end
    end
    error("no select item matched")
  end
end

--- Answer vim.ui.input with `text` (nil cancels).
function H.answer_input(text)
  vim.ui.input = function(_, on_confirm)
    on_confirm(text)
  end
end

--- The file's entries as pi reads them: a line still being written (the server takes a
--- long line's room first, then fills it) does not decode yet and is skipped.
function H.read_entries(file)
  local out = {}
  for _, line in ipairs(vim.fn.readfile(file)) do
    local ok, entry = pcall(vim.json.decode, line, { luanil = { object = true } })
    if ok and type(entry) == "table" then
      out[#out + 1] = entry
    end
  end
  return out
end

--- The file's last entry (as `read_entries` reads them).
function H.last_entry(file)
  local entries = H.read_entries(file)
  return entries[#entries]
end

return H
