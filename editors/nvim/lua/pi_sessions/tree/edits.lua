-- Context edits (pi 1.6.0's context_edit) in the sidebar: which rows are left
-- out of the context or replaced on the path to the leaf, drawn as marks at
-- the end of their lines, and the omit / restore requests.
local HEADER = require("pi_sessions.tree.sidebar").HEADER

local M = {}

M.ns = vim.api.nvim_create_namespace("pi_sessions_edits")

local MARKS = {
  omitted = { "⊘ omitted", "PiTreeOmitted" },
  replaced = { "✎ replaced", "PiTreeOmitted" },
}

--- The content pi sends for an entry when no edit is in force.
function M.original(entry)
  if entry.type == "custom_message" then
    return entry.content
  end
  return entry.message and entry.message.content
end

--- Mark the loaded rows [from, from + #rows) that have an edit in force.
function M.mark(sb, from, rows)
  if not sb:is_open() then
    return
  end
  local first = HEADER + from
  vim.api.nvim_buf_clear_namespace(sb.buf, M.ns, first, first + #rows)
  for i, row in ipairs(rows) do
    local mark = MARKS[(sb.edits or {})[row.id]]
    if mark then
      vim.api.nvim_buf_set_extmark(sb.buf, M.ns, first + i - 1, 0, { virt_text = { mark }, virt_text_pos = "eol" })
    end
  end
end

local function mark_loaded(sb)
  vim.api.nvim_buf_clear_namespace(sb.buf, M.ns, 0, -1)
  for idx, row in pairs(sb.rows) do
    M.mark(sb, idx, { row })
  end
end

--- Fetch the edits in force at the session's leaf (pi/getContextEdits) into
--- `sb.edits` (id -> "omitted" | "replaced") and mark the rows. A replacement
--- equal to the entry's own content is a restore: no mark.
function M.load(sb, gen)
  local session = sb.session
  sb:request("pi/getContextEdits", { session = session }, function(err, result)
    if err or gen ~= sb.gen or not sb:is_open() then
      return
    end
    local states, pending = {}, 1
    local function done()
      pending = pending - 1
      if pending == 0 and gen == sb.gen and sb:is_open() then
        sb.edits = states
        mark_loaded(sb)
      end
    end
    for _, e in ipairs(result.edits or {}) do
      if e.replacement == nil or e.replacement == vim.NIL then
        states[e.targetId] = "omitted"
      else
        pending = pending + 1
        sb:request("pi/getEntry", { session = session, id = e.targetId }, function(e2, r)
          if not e2 and not vim.deep_equal(M.original(r.entry), e.replacement.content) then
            states[e.targetId] = "replaced"
          end
          done()
        end)
      end
    end
    done()
  end, { quiet = true })
end

--- Append a context_edit for `row` (replacement: vim.NIL omits it) and show
--- the new leaf.
function M.write(sb, row, replacement, what)
  local paging = require("pi_sessions.tree.paging")
  local util = require("pi_sessions.util")
  local params = { session = sb.session, targetId = row.id, replacement = replacement }
  sb:request("pi/editContext", params, function(err, result)
    if err then
      return
    end
    util.info(what .. (result.queued and " (queued until pi's turn ends)" or ""))
    paging.refresh(sb, { focus = "leaf" })
  end)
end

return M
