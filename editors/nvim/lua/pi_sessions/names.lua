-- Session files as the server names them. A path that is UTF-8 travels as
-- itself; a file name that is not (copied from a Latin-1 disk) cannot be a
-- JSON string, so the server sends its `file:` URI (each such byte as %XX)
-- and, in listings, `displayPath` (docs/protocol.md, "Session files"). The
-- plugin keeps `session` as the server sent it and sends it back unchanged;
-- these helpers are for comparing, showing and opening it. Lua strings are
-- bytes, so the path a URI names is a string Neovim can open as it is.
local M = {}

-- Length of the UTF-8 sequence at `i` and whether it is valid; an invalid one
-- is the longest prefix that could have started a valid one (at least one
-- byte), so it becomes one U+FFFD as Python's "replace" makes it.
local function sequence(s, i)
  local c = s:byte(i)
  if c < 0x80 then
    return 1, true
  end
  local len, lo, hi
  if c >= 0xC2 and c <= 0xDF then
    len, lo, hi = 2, 0x80, 0xBF
  elseif c == 0xE0 then
    len, lo, hi = 3, 0xA0, 0xBF
  elseif c == 0xED then
    len, lo, hi = 3, 0x80, 0x9F -- not a surrogate
  elseif c >= 0xE1 and c <= 0xEF then
    len, lo, hi = 3, 0x80, 0xBF
  elseif c == 0xF0 then
    len, lo, hi = 4, 0x90, 0xBF
  elseif c >= 0xF1 and c <= 0xF3 then
    len, lo, hi = 4, 0x80, 0xBF
  elseif c == 0xF4 then
    len, lo, hi = 4, 0x80, 0x8F
  else
    return 1, false
  end
  for k = 1, len - 1 do
    local b = s:byte(i + k)
    if not b or b < lo or b > hi then
      return k, false
    end
    lo, hi = 0x80, 0xBF
  end
  return len, true
end

--- `s` with each byte sequence that is not UTF-8 shown as U+FFFD. Pure.
function M.replace_invalid(s)
  local out, i = {}, 1
  while i <= #s do
    local len, ok = sequence(s, i)
    out[#out + 1] = ok and s:sub(i, i + len - 1) or "\239\191\189"
    i = i + len
  end
  return table.concat(out)
end

function M.is_utf8(s)
  local i = 1
  while i <= #s do
    local len, ok = sequence(s, i)
    if not ok then
      return false
    end
    i = i + len
  end
  return true
end

--- The path (bytes) a local `file:` URI names (no host, or localhost); nil
--- for anything else. Pure.
function M.uri_path(session)
  if type(session) ~= "string" then
    return nil
  end
  local rest = session:match("^[Ff][Ii][Ll][Ee]:(.*)$")
  if not rest or rest:find("[?#]") then
    return nil
  end
  local path = rest:match("^//localhost(/.*)$") or rest:match("^//(/.*)$") or rest:match("^(/[^/].*)$")
  if not path then
    return nil
  end
  return (path:gsub("%%(%x%x)", function(h)
    return string.char(tonumber(h, 16))
  end))
end

--- The file a session names, as a path Neovim can open (bytes). Pure.
function M.path(session)
  return M.uri_path(session) or session
end

--- A local path as a `session` param: itself when it is UTF-8, else its
--- `file:` URI (JSON cannot carry the bytes). Pure.
function M.to_session(path)
  if M.is_utf8(path) then
    return path
  end
  local encoded = path:gsub("[^%w/._~-]", function(c)
    return ("%%%02X"):format(c:byte())
  end)
  return "file://" .. encoded
end

--- What the plugin keeps for a session it is given: a URI as it came, a path
--- made absolute and normalized (and a URI when it is not UTF-8).
function M.session(session)
  if M.uri_path(session) then
    return session
  end
  return M.to_session(vim.fs.normalize(vim.fn.fnamemodify(session, ":p")))
end

--- The session's file as a person reads it: the listing's `displayPath` when
--- given, else the path with bytes that are not UTF-8 as U+FFFD. Pure.
function M.display_path(session, info)
  if type(info) == "table" and type(info.displayPath) == "string" then
    return info.displayPath
  end
  return M.replace_invalid(M.path(session or ""))
end

--- The file name, as shown (`:t`); `:t:r` without its extension.
function M.display_name(session, info, strip_ext)
  local name = M.display_path(session, info):match("[^/]*$")
  return strip_ext and (name:gsub("%.[^.]*$", "")) or name
end

--- Two sessions name the same file (a URI and a path alike).
function M.same(a, b)
  if not a or not b then
    return false
  end
  return vim.fs.normalize(M.path(a)) == vim.fs.normalize(M.path(b))
end

return M
