-- A loopback fake of the Anthropic Messages API on vim.uv: real HTTP, SSE
-- streams of scripted replies, recorded request bodies.
local F = {}
F.__index = F

local function sse(events)
  local out = {}
  for _, ev in ipairs(events) do
    local data = vim.tbl_extend("force", { type = ev[1] }, ev[2])
    table.insert(out, ("event: %s\ndata: %s\n\n"):format(ev[1], vim.json.encode(data)))
  end
  return table.concat(out)
end

-- reply: { text = "..." } or { tool = { id, name, input } }
local function stream(reply)
  local ev = {
    { "message_start", { message = { id = "msg_fake", type = "message", role = "assistant", model = "claude-sonnet-4-5",
      content = {}, stop_reason = vim.NIL, stop_sequence = vim.NIL, usage = { input_tokens = 10, output_tokens = 1 } } } },
  }
  if reply.text then
    table.insert(ev, { "content_block_start", { index = 0, content_block = { type = "text", text = "" } } })
    table.insert(ev, { "content_block_delta", { index = 0, delta = { type = "text_delta", text = reply.text } } })
    table.insert(ev, { "content_block_stop", { index = 0 } })
  else
    local t = reply.tool
    table.insert(ev, { "content_block_start", { index = 0, content_block = { type = "tool_use", id = t.id, name = t.name, input = vim.empty_dict() } } })
    table.insert(ev, { "content_block_delta", { index = 0, delta = { type = "input_json_delta", partial_json = vim.json.encode(t.input) } } })
    table.insert(ev, { "content_block_stop", { index = 0 } })
  end
  table.insert(ev, { "message_delta", { delta = { stop_reason = reply.text and "end_turn" or "tool_use", stop_sequence = vim.NIL }, usage = { output_tokens = 7 } } })
  table.insert(ev, { "message_stop", vim.empty_dict() })
  return sse(ev)
end

function F.start()
  local self = setmetatable({ replies = {}, requests = {} }, F)
  local server = assert(vim.uv.new_tcp())
  assert(server:bind("127.0.0.1", 0))
  server:listen(16, function()
    local sock = vim.uv.new_tcp()
    server:accept(sock)
    local buf = ""
    sock:read_start(function(_, chunk)
      if not chunk then
        return sock:close()
      end
      buf = buf .. chunk
      local head_end = buf:find("\r\n\r\n", 1, true)
      if not head_end then
        return
      end
      local len = tonumber(buf:sub(1, head_end):lower():match("content%-length:%s*(%d+)")) or 0
      if #buf < head_end + 3 + len then
        return
      end
      local body = buf:sub(head_end + 4, head_end + 3 + len)
      sock:read_stop()
      vim.schedule(function()
        table.insert(self.requests, vim.json.decode(body))
      end)
      local reply = table.remove(self.replies, 1) or { text = "Done." }
      local payload = stream(reply)
      sock:write(("HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: %d\r\nconnection: close\r\n\r\n%s"):format(#payload, payload), function()
        sock:shutdown(function()
          sock:close()
        end)
      end)
    end)
  end)
  self.server = server
  self.url = "http://127.0.0.1:" .. server:getsockname().port
  return self
end

function F:stop()
  if self.server and not self.server:is_closing() then
    self.server:close()
  end
end

return F
