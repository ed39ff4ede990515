-- The LSP client: one per workspace root, started on FileType (0.7: vim.lsp.start_client and
-- buf_attach_client; 0.8+: vim.lsp.start), with the review, live view and progress handlers.

local util = require('copyedit.util')
local notify, fire = util.notify, util.fire
local plugin = util.plugin

local live = require('copyedit.live')
local review = require('copyedit.review')

local C = {}
C.progress_titles = nil -- the title of each running progress token

local root_clients = {} -- root_dir -> client id (0.7: no vim.lsp.start to reuse clients)

local function is_copyedit(client)
  return client and client.name == plugin().name
end

-- The copyedit clients attached to a buffer (0.7 has buf_get_clients; 0.10+ get_clients).
function C.clients(bufnr)
  local found = {}
  if vim.lsp.get_clients then
    for _, client in ipairs(vim.lsp.get_clients({ bufnr = bufnr, name = plugin().name })) do
      table.insert(found, client)
    end
  else
    local clients = bufnr and vim.lsp.buf_get_clients(bufnr) or vim.lsp.get_active_clients()
    for _, client in pairs(clients) do
      if is_copyedit(client) then
        table.insert(found, client)
      end
    end
  end
  return found
end

local function root_dir(bufnr)
  local name = vim.api.nvim_buf_get_name(bufnr)
  local dir = name ~= '' and vim.fn.fnamemodify(name, ':p:h') or vim.loop.cwd()
  local current = dir
  while current and current ~= '' do
    for _, marker in ipairs(plugin().config.root_markers or {}) do
      if vim.loop.fs_stat(current .. '/' .. marker) then
        return current
      end
    end
    local parent = vim.fn.fnamemodify(current, ':h')
    if parent == current then
      break
    end
    current = parent
  end
  return dir
end

-- $/progress: chain to the default handler (client.messages.progress, User LspProgressUpdate),
-- then show the message and remember it (User CopyEditProgress).
local function progress_handler(err, result, ctx, config)
  local default = vim.lsp.handlers['$/progress']
  local returned
  if default then
    -- (0.7's default handler raises on a report whose begin it missed: keep showing ours)
    local ok, value = pcall(default, err, result, ctx, config)
    returned = ok and value or nil
  end
  local value = result and result.value
  if type(value) == 'table' and value.kind then
    local state = C.progress_titles or {}
    C.progress_titles = state
    if value.kind == 'begin' then
      state[result.token] = value.title
    end
    local title = state[result.token] or 'copyedit'
    if value.kind == 'end' then
      state[result.token] = nil
    end
    plugin().last_progress = {
      token = result.token,
      kind = value.kind,
      title = title,
      message = value.message,
      percentage = value.percentage,
    }
    local text = title .. (value.message and (': ' .. value.message) or '')
    if value.percentage and value.kind ~= 'end' then
      text = text .. string.format(' (%d%%)', value.percentage)
    end
    if plugin().config.progress == 'notify' then
      vim.notify(text, vim.log.levels.INFO)
    elseif plugin().config.progress == 'echo' then
      vim.api.nvim_echo({ { text, 'ModeMsg' } }, false, {})
    end
    fire('CopyEditProgress')
  end
  return returned
end


-- The client's capabilities: Neovim's, with change annotations (the review reads them).
local function capabilities()
  local caps = vim.lsp.protocol.make_client_capabilities()
  caps.workspace = caps.workspace or {}
  caps.workspace.workspaceEdit = caps.workspace.workspaceEdit or {}
  caps.workspace.workspaceEdit.changeAnnotationSupport = { groupsOnLabel = false }
  return caps
end

local function client_config(bufnr)
  local root = root_dir(bufnr)
  return {
    name = plugin().name,
    cmd = plugin().config.cmd,
    root_dir = root,
    workspace_folders = { { uri = vim.uri_from_fname(root), name = root } },
    init_options = plugin().config.init_options,
    handlers = {
      ['$/progress'] = progress_handler,
      ['workspace/applyEdit'] = review.apply_edit_handler,
      ['copyedit/op'] = live.op_handler,
      ['copyedit/provenance'] = review.provenance_handler,
    },
    capabilities = capabilities(),
    flags = plugin().config.flags,
    on_attach = plugin().config.on_attach,
  }
end

-- Start (or reuse) the client for this buffer's root and attach the buffer.
function C.attach(bufnr)
  bufnr = (bufnr == nil or bufnr == 0) and vim.api.nvim_get_current_buf() or bufnr
  if vim.bo[bufnr].buftype ~= '' then
    return nil
  end
  local config = client_config(bufnr)
  if vim.lsp.start then
    return vim.lsp.start(config, { bufnr = bufnr })
  end
  local id = root_clients[config.root_dir]
  if id == nil or vim.lsp.client_is_stopped(id) then
    id = vim.lsp.start_client(config)
    if not id then
      notify('could not start ' .. table.concat(plugin().config.cmd, ' '), vim.log.levels.ERROR)
      return nil
    end
    root_clients[config.root_dir] = id
  end
  vim.lsp.buf_attach_client(bufnr, id)
  return id
end

-- Run fn(client) once the buffer's copyedit client has initialized (bounded: 60 s).
function C.with_client(bufnr, fn)
  local client = C.clients(bufnr)[1]
  if not client then
    notify('no copyedit server is attached to this buffer (filetype ' .. vim.bo[bufnr].filetype .. ')', vim.log.levels.ERROR)
    return
  end
  if client.initialized then
    return fn(client)
  end
  local waited = 0
  local function retry()
    if client.initialized then
      return fn(client)
    elseif util.is_stopped(client) or waited > 60000 then
      notify('the server did not start', vim.log.levels.ERROR)
    else
      waited = waited + 100
      vim.defer_fn(retry, 100)
    end
  end
  notify('waiting for the server to start')
  vim.defer_fn(retry, 100)
end

return C
