-- The :CopyEdit, :CopyEditWorkspace, :CopyEditApply(To) and :CopyEditCancel commands exist once the plugin is on
-- the runtimepath; the server starts once require('copyedit').setup{...} has run.
if vim.g.loaded_copyedit or vim.fn.has('nvim-0.7') == 0 then
  return
end
vim.g.loaded_copyedit = true
require('copyedit').create_commands()
