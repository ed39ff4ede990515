-- The live view.
-- copyedit/op: the server's notification as each op of a running edit closes. Copied lines are
-- dimmed, a gen is marked where its lines go; the status line shows ops and tokens/s.

local util = require('copyedit.util')
local fire = util.fire
local plugin = util.plugin

local L = {}

local live_ns = vim.api.nvim_create_namespace('copyedit-live')
vim.api.nvim_set_hl(0, 'CopyEditCopied', { default = true, link = 'Comment' })
vim.api.nvim_set_hl(0, 'CopyEditGenerated', { default = true, link = 'DiffAdd' })

function L.op_handler(_, params)
  if type(params) ~= 'table' then
    return
  end
  if params.index == 0 then
    plugin().ops = {}
  end
  if params.op then
    table.insert(plugin().ops, params)
  end
  local bufnr = vim.uri_to_bufnr(params.uri)
  if plugin().config.live and vim.api.nvim_buf_is_loaded(bufnr) then
    if params.done then
      vim.api.nvim_buf_clear_namespace(bufnr, live_ns, 0, -1)
    elseif params.op and params.op.kind == 'copy' then
      for row = params.op.start, params.op['end'] - 1 do
        pcall(vim.api.nvim_buf_add_highlight, bufnr, live_ns, 'CopyEditCopied', row, 0, -1)
      end
    elseif params.op and params.op.kind == 'gen' then
      local count = vim.api.nvim_buf_line_count(bufnr)
      local row = math.min(params.op.line, count - 1)
      local text = string.format('  + %d line(s) written', params.op.lines)
      pcall(vim.api.nvim_buf_set_extmark, bufnr, live_ns, row, 0, { virt_text = { { text, 'CopyEditGenerated' } } })
    end
  end
  fire('CopyEditOp')
end

return L
