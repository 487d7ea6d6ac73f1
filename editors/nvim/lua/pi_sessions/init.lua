-- Entry point: setup(), the user commands, highlight groups, and attaching
-- the LSP client to session files for outline, diagnostics, hover and
-- go-to-parent.
local client = require("pi_sessions.client")
local config = require("pi_sessions.config")

local M = {}

local HIGHLIGHTS = {
  PiTreeActive = "Identifier", -- rows on the root -> leaf path
  PiTreeLeaf = "Special", -- the leaf itself
  PiTreeLabel = "Label", -- [label]
  PiTreeTool = "Comment", -- tool results and calls, dimmed as pi does
  PiTreeGutter = "NonText", -- │ ├─ └─ ⊟ ⊞
  PiTreeHeader = "Title",
  PiTreeUser = "Normal",
  PiTreeMeta = "PreProc", -- compactions, summaries, other entry types
  PiTreeOmitted = "DiagnosticWarn", -- "⊘ omitted" / "✎ replaced": a context edit in force
  PiChatUser = "Title", -- "▍ You"
  PiChatAssistant = "Identifier", -- "▍ pi"
  PiChatThinking = "Comment",
  PiChatTool = "Comment",
  PiChatNote = "NonText",
  PiChatError = "ErrorMsg",
}

function M.define_highlights()
  for group, link in pairs(HIGHLIGHTS) do
    vim.api.nvim_set_hl(0, group, { link = link, default = true })
  end
end

--- Is `path` inside one of the session roots?
function M.in_roots(path)
  if not path or path == "" then
    return false
  end
  path = vim.fs.normalize(vim.fn.fnamemodify(path, ":p"))
  for _, root in ipairs(config.roots()) do
    if path:sub(1, #root + 1) == root .. "/" then
      return true
    end
  end
  return false
end

local function attach_autocmd()
  local group = vim.api.nvim_create_augroup("pi_sessions_attach", { clear = true })
  if not config.options.attach_jsonl then
    return
  end
  vim.api.nvim_create_autocmd({ "BufReadPost", "BufNewFile" }, {
    group = group,
    pattern = "*.jsonl",
    callback = function(ev)
      if M.in_roots(vim.api.nvim_buf_get_name(ev.buf)) then
        client.attach(ev.buf)
      end
    end,
  })
  -- buffers read before setup() ran (e.g. a plugin manager loading on filetype)
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    local name = vim.api.nvim_buf_get_name(buf)
    if vim.api.nvim_buf_is_loaded(buf) and name:match("%.jsonl$") and M.in_roots(name) then
      client.attach(buf)
    end
  end
end

local function session_for_command(arg, cb)
  if arg and arg ~= "" then
    local names = require("pi_sessions.names")
    return cb(names.session(names.uri_path(arg) and arg or vim.fn.expand(arg)))
  end
  local s = require("pi_sessions.context").current_session()
  if s then
    return cb(s)
  end
  client.request("pi/listSessions", { limit = 1 }, function(err, result)
    if err then
      return
    end
    local first = result.sessions and result.sessions[1]
    if not first then
      return client.notify_error("no sessions found under " .. table.concat(config.roots(), ", "))
    end
    cb(first.session)
  end)
end

-- The leaf to act on: the row under the cursor in the sidebar, else the
-- session's current leaf.
local function target_leaf(session, cb)
  local tree = require("pi_sessions.tree")
  if vim.api.nvim_get_current_buf() == tree.state.buf then
    local row = tree.current_row()
    if row then
      return cb(row.id)
    end
  end
  client.request("pi/getTree", { session = session, offset = 0, limit = 1 }, function(err, result)
    if not err then
      cb(result.leafId)
    end
  end)
end

function M.rename(name)
  local session = require("pi_sessions.context").current_session()
  if not session then
    return client.notify_error("no session: open one with :PiSessions or :PiTree first")
  end
  local function go(text)
    client.request("pi/setSessionName", { session = session, name = text }, function(err, result)
      if not err then
        require("pi_sessions.util").info(result.queued and "name queued until pi's turn ends" or ("session named " .. text))
        require("pi_sessions.tree").set_name(session, text)
      end
    end)
  end
  if name and name ~= "" then
    return go(name)
  end
  vim.ui.input({ prompt = "Session name: ", default = require("pi_sessions.tree").state.name or "" }, function(text)
    if text and vim.trim(text) ~= "" then
      go(vim.trim(text))
    end
  end)
end

function M.fork()
  local session = require("pi_sessions.context").current_session()
  if not session then
    return client.notify_error("no session: open one with :PiSessions or :PiTree first")
  end
  target_leaf(session, function(leaf)
    client.request("pi/fork", { session = session, leafId = leaf }, function(err, result)
      if not err then
        require("pi_sessions.util").info("forked into " .. require("pi_sessions.names").display_name(result.session))
        require("pi_sessions.tree").open(result.session)
      end
    end)
  end)
end

function M.compact(instructions)
  local session = require("pi_sessions.context").current_session()
  if not session then
    return client.notify_error("no session: open one with :PiSessions or :PiTree first")
  end
  local params = { session = session }
  if instructions and instructions ~= "" then
    params.customInstructions = instructions
  end
  require("pi_sessions.util").info("compacting…")
  client.request("pi/compact", params, function(err, result)
    if not err then
      require("pi_sessions.util").info(
        ("compacted: %s tokens before, first kept entry %s%s"):format(
          tostring(result.tokensBefore),
          tostring(result.firstKeptEntryId),
          result.queued and " (queued until pi's turn ends)" or ""
        )
      )
    end
  end)
end

function M.create_commands()
  local cmd = vim.api.nvim_create_user_command
  cmd("PiSessions", function(o)
    require("pi_sessions.sessions").pick(o.args)
  end, { nargs = "*", desc = "Pick a pi session (optional search words)" })
  cmd("PiTree", function(o)
    session_for_command(o.args, function(s)
      require("pi_sessions.tree").open(s)
    end)
  end, { nargs = "?", complete = "file", desc = "Open the tree sidebar for a pi session" })
  cmd("PiContext", function(o)
    require("pi_sessions.context").open(o.args)
  end, {
    nargs = "?",
    complete = function() return { "agent", "llm", "anthropic", "openai" } end,
    desc = "Show the context JSON of the leaf or the entry under the cursor",
  })
  cmd("PiSystem", function()
    require("pi_sessions.system").command()
  end, { nargs = 0, desc = "Show the system prompt and tools at the leaf / entry under the cursor" })
  cmd("PiStats", function()
    require("pi_sessions.stats").command()
  end, { nargs = 0, desc = "Show the tokens and cost of the session's branch and of the whole file" })
  cmd("PiChat", function(o)
    if o.bang then
      local cwd = o.args ~= "" and vim.fs.normalize(vim.fn.fnamemodify(vim.fn.expand(o.args), ":p")) or vim.fn.getcwd()
      return require("pi_sessions.chat").open(nil, (cwd:gsub("/$", "")))
    end
    session_for_command(o.args, function(s)
      require("pi_sessions.chat").open(s)
    end)
  end, { nargs = "?", bang = true, complete = "file", desc = "Chat with pi on a session's leaf (! : a new session in a folder)" })
  cmd("PiSearch", function(o)
    require("pi_sessions.search").run(o.args)
  end, { nargs = "+", desc = 'Search every entry of every pi session (words, "a phrase", re:pattern)' })
  vim.api.nvim_create_autocmd("FileType", {
    group = vim.api.nvim_create_augroup("pi_sessions_search", { clear = true }),
    pattern = "qf",
    callback = function(ev)
      vim.keymap.set("n", "<CR>", function() require("pi_sessions.search").qf_enter() end,
        { buffer = ev.buf, desc = "pi: open a :PiSearch hit's tree at its row" })
    end,
  })
  cmd("PiRename", function(o) M.rename(o.args) end, { nargs = "*", desc = "Name the current pi session" })
  cmd("PiFork", function() M.fork() end, { nargs = 0, desc = "Fork the session at the leaf / entry under the cursor" })
  cmd("PiCompact", function(o) M.compact(o.args) end, { nargs = "*", desc = "Compact the session (optional instructions)" })
end

--- setup(opts): see :help pi_sessions-options.
function M.setup(opts)
  config.set(opts)
  M.define_highlights()
  M.create_commands()
  attach_autocmd()
  -- re-apply default links after a colorscheme clears them
  vim.api.nvim_create_autocmd("ColorScheme", {
    group = vim.api.nvim_create_augroup("pi_sessions_hl", { clear = true }),
    callback = M.define_highlights,
  })
end

M.client = client

return M
