-- Live refresh: an entry appended to the file by someone else (pi) shows up.
local H = require("helpers")
local tree = require("pi_sessions.tree")

local function append(file, entry)
  local f = assert(io.open(file, "a"))
  f:write(vim.json.encode(entry) .. "\n")
  f:close()
end

return {
  { "an appended entry appears and the cursor keeps its entry", function()
    local file = H.shop()
    H.open(file)
    local keep = H.row_where(function(r) return r.title:find("^user: Run the tests") end)
    H.cursor_to(keep.id)
    local before = #H.lines()
    local entries = H.read_entries(file)
    local leaf = H.request("pi/getTree", { session = file, limit = 1 }).leafId
    local copy
    for _, e in ipairs(entries) do
      if e.type == "message" and e.message.role == "assistant" then
        copy = vim.deepcopy(e)
      end
    end
    copy.id = "feedf00d"
    copy.parentId = leaf
    copy.timestamp = "2026-11-30T09:10:00.000Z"
    append(file, copy)
    H.wait(function() return #H.lines() == before + 1 end, "the new row", 10000)
    H.idle()
    H.eq(H.cli_tree(file), H.lines(), "sidebar equals the CLI after the append")
    H.eq(keep.id, H.cursor_row().id, "cursor on the same entry")
    H.eq("feedf00d", tree.state.leaf_id, "the appended entry is the leaf")
  end },
  { "a session updated by another client's write (pi/setLabel) refreshes too", function()
    local file = H.shop()
    H.open(file)
    local row = H.row_where(function(r) return r.title:find("^user: Now add pagination") end)
    H.request("pi/setLabel", { session = file, targetId = row.id, label = "paging" })
    H.wait(function()
      for _, l in ipairs(H.lines()) do
        if l:find("[paging] user: Now add pagination", 1, true) then
          return true
        end
      end
    end, "label shown without pressing r")
  end },
}
