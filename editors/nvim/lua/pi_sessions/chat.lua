-- :PiChat: a chat buffer bound to a session's current leaf. Prompts run real
-- turns in pi-server (pi/prompt); pi's agent events (pi/agentEvent) are
-- folded into the buffer as they stream; <C-c> aborts (pi/abort).
local client = require("pi_sessions.client")

local M = {}

local chats = {} -- session (or "new:<cwd>") -> chat state
local ns = vim.api.nvim_create_namespace("pi_sessions_chat")

local function text_of(content)
  if type(content) == "string" then
    return content
  end
  local out = {}
  for _, b in ipairs(type(content) == "table" and content or {}) do
    if type(b) == "table" and b.type == "text" then
      table.insert(out, b.text or "")
    end
  end
  return table.concat(out, "")
end

--- One chat item per message, as the conversation reads: pure, so tests can feed it events.
local Chat = {}
Chat.__index = Chat

function M.new_model(session)
  return setmetatable({ session = session, items = {}, tools = {}, running = false }, Chat)
end

function Chat:add_message(m, live)
  local role = type(m) == "table" and m.role or nil
  if role == "user" then
    table.insert(self.items, { kind = "user", text = text_of(m.content) })
  elseif role == "assistant" then
    table.insert(self.items, { kind = "assistant", text = "", thinking = "", tools = {}, streaming = live })
    self:update_assistant(m, live)
  elseif role == "toolResult" then
    local t = self.tools[m.toolCallId]
    if t then
      t.result, t.is_error, t.running = text_of(m.content), m.isError == true, false
    end
  elseif role == "branchSummary" then
    table.insert(self.items, { kind = "note", text = "Branch summary: " .. (m.summary or "") })
  elseif role == "compactionSummary" then
    table.insert(self.items, { kind = "note", text = "Compacted context: " .. (m.summary or "") })
  elseif role == "bashExecution" then
    table.insert(self.items, { kind = "note", text = "$ " .. (m.command or "") .. "\n" .. (m.output or "") })
  elseif role == "custom" and m.display ~= false then
    table.insert(self.items, { kind = "note", text = text_of(m.content) })
  end
end

-- pi sends the whole partial message with each update: redraw the last assistant item from it
function Chat:update_assistant(m, streaming)
  local item = self.items[#self.items]
  if not item or item.kind ~= "assistant" then
    item = { kind = "assistant", text = "", thinking = "", tools = {}, streaming = streaming }
    table.insert(self.items, item)
  end
  local text, thinking, tools = {}, {}, {}
  for _, b in ipairs(type(m.content) == "table" and m.content or {}) do
    if b.type == "text" then
      table.insert(text, b.text or "")
    elseif b.type == "thinking" then
      table.insert(thinking, b.thinking or "")
    elseif b.type == "toolCall" and b.id then
      local t = self.tools[b.id] or { id = b.id, name = b.name or "", running = false }
      t.args = b.arguments
      self.tools[b.id] = t
      table.insert(tools, t)
    end
  end
  item.text, item.thinking, item.tools = table.concat(text, ""), table.concat(thinking, "\n"), tools
  item.stop_reason, item.error_message, item.streaming = m.stopReason, m.errorMessage, streaming
end

--- Fold one pi/agentEvent in; returns true when something changed.
function Chat:apply(p)
  if not self.session and self.running then
    self.session = p.session -- a new session's events can come before pi/prompt's reply
  end
  if p.session ~= self.session then
    return false
  end
  local e = p.event or {}
  local t = e.type
  if t == "agent_start" then
    self.running, self.turn_id = true, p.turnId
  elseif t == "message_start" then
    self:add_message(e.message, true)
  elseif (t == "message_update" or t == "message_end") and type(e.message) == "table" and e.message.role == "assistant" then
    self:update_assistant(e.message, t == "message_update")
  elseif t == "tool_execution_start" then
    local tool = self.tools[e.toolCallId]
    if tool then
      tool.running = true
    end
  elseif t == "tool_execution_end" then
    local tool = self.tools[e.toolCallId]
    if tool then
      tool.running, tool.is_error = false, e.isError == true
      tool.result = type(e.result) == "table" and text_of(e.result.content) or tostring(e.result or "")
    end
  elseif t == "agent_end" then
    self.running = false
    for _, item in ipairs(self.items) do
      item.streaming = false
    end
  else
    return false
  end
  return true
end

local function split(s)
  return vim.split(s or "", "\n", { plain = true })
end

local function short_args(args)
  local ok, s = pcall(vim.json.encode, args or vim.empty_dict())
  s = ok and s or "?"
  return #s > 120 and (s:sub(1, 117) .. "...") or s
end

--- The buffer lines and highlights for a model: pure.
function M.render(model)
  local lines, marks = {}, {}
  local function add(s, hl)
    table.insert(lines, s)
    if hl then
      table.insert(marks, { #lines - 1, hl })
    end
  end
  for _, item in ipairs(model.items) do
    if item.kind == "user" then
      add("▍ You", "PiChatUser")
      for _, l in ipairs(split(item.text)) do
        add("  " .. l)
      end
    elseif item.kind == "note" then
      for _, l in ipairs(split(item.text)) do
        add("  " .. l, "PiChatNote")
      end
    else
      add("▍ pi" .. (item.streaming and " …" or ""), "PiChatAssistant")
      if item.thinking ~= "" then
        add(("  ▸ thinking (%d lines)"):format(#split(item.thinking)), "PiChatThinking")
      end
      for _, l in ipairs(item.text ~= "" and split(item.text) or {}) do
        add("  " .. l)
      end
      for _, tool in ipairs(item.tools) do
        local state = tool.running and " …" or (tool.is_error and " ✗" or (tool.result and " ✓" or ""))
        add(("  ⚙ %s %s%s"):format(tool.name, short_args(tool.args), state), tool.is_error and "PiChatError" or "PiChatTool")
        if tool.result then
          local rl = split(tool.result)
          for i = 1, math.min(#rl, 3) do
            add("    " .. rl[i], "PiChatTool")
          end
          if #rl > 3 then
            add(("    … %d more lines"):format(#rl - 3), "PiChatTool")
          end
        end
      end
      if item.stop_reason == "aborted" or item.stop_reason == "error" then
        add("  [" .. (item.error_message or item.stop_reason) .. "]", "PiChatError")
      end
    end
    add("")
  end
  if model.running then
    add("(pi is working — <C-c> stops it)", "PiChatNote")
  else
    add("(i or <CR>: message pi · <C-c>: stop · q: close)", "PiChatNote")
  end
  return lines, marks
end

local function buf_name(session)
  return "pi-chat://" .. (session and require("pi_sessions.names").display_name(session, nil, true) or "new")
end

-- A new session's chat is "pi-chat://new" until pi has written its file;
-- from then on it is named after the session, as a chat opened on it is.
local function follow_session_name(chat)
  local session = chat.model.session
  if not session or chat.named == session or not vim.uv.fs_stat(require("pi_sessions.names").path(session)) then
    return
  end
  local old = vim.api.nvim_buf_get_name(chat.buf)
  if not pcall(vim.api.nvim_buf_set_name, chat.buf, buf_name(session)) then
    return
  end
  chat.named = session
  -- renaming leaves an unlisted buffer with the old name (as :file does)
  for _, b in ipairs(vim.api.nvim_list_bufs()) do
    if b ~= chat.buf and vim.api.nvim_buf_get_name(b) == old and not vim.api.nvim_buf_is_loaded(b) then
      pcall(vim.api.nvim_buf_delete, b, { force = true })
    end
  end
end

local function draw(chat)
  if not (chat.buf and vim.api.nvim_buf_is_valid(chat.buf)) then
    return
  end
  follow_session_name(chat)
  local lines, marks = M.render(chat.model)
  vim.bo[chat.buf].modifiable = true
  vim.api.nvim_buf_set_lines(chat.buf, 0, -1, false, lines)
  vim.bo[chat.buf].modifiable = false
  vim.api.nvim_buf_clear_namespace(chat.buf, ns, 0, -1)
  for _, m in ipairs(marks) do
    vim.api.nvim_buf_set_extmark(chat.buf, ns, m[1], 0, { line_hl_group = m[2] })
  end
  for _, win in ipairs(vim.fn.win_findbuf(chat.buf)) do
    vim.api.nvim_win_set_cursor(win, { #lines, 0 })
  end
end

local subscribed = false
local function subscribe()
  if subscribed then
    return
  end
  subscribed = true
  client.on("pi/agentEvent", function(p)
    local chat = chats[p.session]
    if not chat then
      for key, c in pairs(chats) do
        if not c.model.session and c.model.running then
          chat = c
          chats[key], chats[p.session] = nil, c
          break
        end
      end
    end
    if chat and chat.model:apply(p) then
      vim.schedule(function()
        draw(chat)
      end)
    end
  end)
end

function M.send(chat, text)
  if not text or vim.trim(text) == "" then
    return
  end
  local params = { text = text }
  if chat.model.session then
    params.session = chat.model.session
  else
    params.cwd = chat.cwd
  end
  chat.model.running = true
  draw(chat)
  client.request("pi/prompt", params, function(err, result)
    if err then
      chat.model.running = false
    elseif result then
      chat.model.turn_id = result.turnId
      if not chat.model.session then
        chat.model.session = result.session
        for key, c in pairs(chats) do
          if c == chat then
            chats[key] = nil
          end
        end
        chats[result.session] = chat
      end
    end
    draw(chat)
  end)
end

function M.abort(chat)
  if chat.model.session and chat.model.running then
    client.request("pi/abort", { session = chat.model.session })
  end
end

local function keymaps(chat)
  local function map(lhs, fn, desc)
    vim.keymap.set("n", lhs, fn, { buffer = chat.buf, nowait = true, silent = true, desc = desc })
  end
  local function ask()
    vim.ui.input({ prompt = "Message pi: " }, function(text)
      M.send(chat, text)
    end)
  end
  map("i", ask, "Message pi")
  map("<CR>", ask, "Message pi")
  map("<C-c>", function()
    M.abort(chat)
  end, "Stop the turn")
  map("q", function()
    vim.api.nvim_win_close(0, true)
  end, "Close")
end

--- Opens (or shows) the chat of `session`, or a new session in `cwd` when session is nil.
function M.open(session, cwd)
  subscribe()
  local key = session or ("new:" .. (cwd or vim.fn.getcwd()))
  local chat = chats[key]
  if not chat then
    chat = { model = M.new_model(session), cwd = cwd }
    chats[key] = chat
  end
  if not (chat.buf and vim.api.nvim_buf_is_valid(chat.buf)) then
    chat.buf = vim.api.nvim_create_buf(false, true)
    vim.bo[chat.buf].buftype = "nofile"
    vim.bo[chat.buf].bufhidden = "hide"
    vim.bo[chat.buf].swapfile = false
    vim.bo[chat.buf].filetype = "pi_chat"
    if pcall(vim.api.nvim_buf_set_name, chat.buf, buf_name(session)) then
      chat.named = session
    end
    keymaps(chat)
  end
  local wins = vim.fn.win_findbuf(chat.buf)
  if #wins > 0 then
    vim.api.nvim_set_current_win(wins[1])
  else
    vim.cmd("botright vsplit")
    vim.api.nvim_win_set_buf(0, chat.buf)
    vim.wo.wrap, vim.wo.linebreak, vim.wo.number = true, true, false
  end
  draw(chat)
  if session then
    -- history: the context pi would continue from at the leaf
    client.request("pi/buildContext", { session = session, format = "agent" }, function(err, result)
      if err or not result or chat.model.running then
        return
      end
      local model = M.new_model(session)
      for _, m in ipairs(result.messages or {}) do
        model:add_message(m, false)
      end
      chat.model = model
      draw(chat)
    end)
  end
  return chat
end

function M.get(session)
  return chats[session]
end

function M.all()
  return chats
end

return M
