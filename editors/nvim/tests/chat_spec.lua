-- :PiChat runs real turns in the server against a loopback Anthropic fake.
local H = require("helpers")
local Fake = require("fake_anthropic")
local chat_mod = require("pi_sessions.chat")

local function with_fake(fn)
  local fake = Fake.start()
  H.setup({ cmd_env = { HOME = H.home, ANTHROPIC_API_KEY = "sk-test", ANTHROPIC_BASE_URL = fake.url, PI_SERVER_RETRY_BASE_MS = "5" } })
  local ok, err = pcall(fn, fake)
  fake:stop()
  if not ok then
    error(err, 0)
  end
end

local function buf_text(chat)
  return table.concat(vim.api.nvim_buf_get_lines(chat.buf, 0, -1, false), "\n")
end

return {
  { ":PiChat! in a folder: a read round trip, streamed into the buffer and written as a pi session", function()
    with_fake(function(fake)
      local project = H.root .. "/project"
      vim.fn.mkdir(project, "p")
      vim.fn.writefile({ "# Plan", "ship it" }, project .. "/plan.md")
      fake.replies = { { tool = { id = "toolu_1", name = "read", input = { path = "plan.md" } } }, { text = "The plan is to ship it." } }
      vim.cmd("PiChat! " .. vim.fn.fnameescape(project))
      H.eq("pi_chat", vim.bo.filetype)
      local chat = chat_mod.get("new:" .. project)
      H.truthy(chat, "a chat for the folder")
      H.answer_input("What is the plan?")
      vim.api.nvim_feedkeys("i", "mx", false)
      H.wait(function()
        return chat.model.session and not chat.model.running and buf_text(chat):find("The plan is to ship it.", 1, true)
      end, "the turn", 20000)
      local text = buf_text(chat)
      H.truthy(text:find("▍ You\n  What is the plan?", 1, true), text)
      H.truthy(text:find('⚙ read {"path":"plan.md"} ✓', 1, true), text)
      H.truthy(text:find("    ship it", 1, true), text)
      local entries = H.read_entries(chat.model.session)
      H.eq(project, entries[1].cwd)
      local roles = {}
      for _, e in ipairs(entries) do
        if e.type == "message" then
          table.insert(roles, e.message.role)
        end
      end
      -- as pi 1.6.0: the system prompt and tools as a message before the first user message
      H.eq({ "system", "user", "assistant", "toolResult", "assistant" }, roles)
      H.eq(2, #fake.requests)
      local names = {}
      for _, t in ipairs(fake.requests[1].tools) do
        table.insert(names, t.name)
      end
      H.eq({ "read", "ls", "grep", "find" }, names, "no editor tools are offered: this client runs none")
    end)
  end },

  { ":PiChat! names its buffer after the session once the file exists", function()
    with_fake(function(fake)
      local project = H.root .. "/named"
      vim.fn.mkdir(project, "p")
      fake.replies = { { text = "Hello." } }
      vim.cmd("PiChat! " .. vim.fn.fnameescape(project))
      local chat = chat_mod.get("new:" .. project)
      H.eq("pi-chat://new", vim.api.nvim_buf_get_name(chat.buf), "a new chat has no session yet")
      chat_mod.send(chat, "Hi")
      H.wait(function()
        return chat.model.session and not chat.model.running and buf_text(chat):find("Hello.", 1, true)
      end, "the turn", 20000)
      local session = chat.model.session
      H.eq(1, vim.fn.filereadable(session), "pi wrote the session file")
      H.wait(function()
        return vim.api.nvim_buf_get_name(chat.buf) == "pi-chat://" .. vim.fn.fnamemodify(session, ":t:r")
      end, "the buffer named after the session")
      H.eq(-1, vim.fn.bufnr("^pi-chat://new$"), "no buffer is left with the old name")
      H.eq(chat, chat_mod.get(session), "the chat is found by its session")
    end)
  end, timeout = 60000 },

  { ":PiChat on a session shows its context and continues its leaf", function()
    with_fake(function(fake)
      local file = H.shop()
      fake.replies = { { text = "Pagination is done." } }
      vim.cmd("PiChat " .. vim.fn.fnameescape(file))
      local chat = chat_mod.get(file)
      H.wait(function()
        return buf_text(chat):find("Compacted context", 1, true) ~= nil
      end, "history")
      local before = #H.read_entries(file)
      chat_mod.send(chat, "Is pagination finished?")
      H.wait(function()
        return not chat.model.running and buf_text(chat):find("Pagination is done.", 1, true)
      end, "the turn", 20000)
      local entries = H.read_entries(file)
      -- a file from before pi 1.6.0 gets its first system message before the prompt, as pi 1.6.0 writes it
      H.eq(before + 3, #entries)
      H.eq("system", entries[before + 1].message.role)
      H.eq("Is pagination finished?", entries[before + 2].message.content[1].text)
      -- the request carried the session's context: pi's compaction summary comes first
      local first = fake.requests[1].messages[1]
      H.truthy(vim.json.encode(first):find("summary", 1, true), "compaction summary in the request")
    end)
  end },

  { "the chat model folds pi's events: streaming text, tool results, abort", function()
    local m = chat_mod.new_model("s")
    local function ev(e)
      return m:apply({ session = "s", turnId = "t", event = e })
    end
    ev({ type = "agent_start" })
    ev({ type = "message_start", message = { role = "user", content = { { type = "text", text = "hi" } } } })
    ev({ type = "message_start", message = { role = "assistant", content = {} } })
    ev({ type = "message_update", message = { role = "assistant", content = { { type = "thinking", thinking = "hm" }, { type = "text", text = "Hel" } } } })
    H.eq("Hel", m.items[2].text)
    H.eq(true, m.items[2].streaming)
    ev({ type = "message_end", message = { role = "assistant", stopReason = "aborted", errorMessage = "Request was aborted",
      content = { { type = "text", text = "Hello" } } } })
    H.eq(false, ev({ type = "turn_start" }))
    H.eq(false, m:apply({ session = "other", turnId = "t", event = { type = "agent_end" } }))
    ev({ type = "agent_end", messages = {} })
    H.eq(false, m.running)
    local lines = chat_mod.render(m)
    H.truthy(vim.tbl_contains(lines, "  [Request was aborted]"), vim.inspect(lines))
    H.truthy(vim.tbl_contains(lines, "  Hello"), vim.inspect(lines))
  end },
}
