-- What the plugin's modules share: messages, User autocmds, and the client calls that changed
-- between Neovim 0.7 and 0.11.

local U = {}

-- The plugin's state and settings, required when used: require('copyedit') loads the modules
-- that call this.
function U.plugin()
  return require('copyedit')
end

function U.notify(message, level)
  vim.notify('copyedit: ' .. message, level or vim.log.levels.INFO)
end

function U.fire(pattern)
  -- `User` autocmds with no handler print "No matching autocommands" unless <nomodeline> + silent
  vim.cmd('silent doautocmd <nomodeline> User ' .. pattern)
end

-- 0.11 made client functions methods (client:request); 0.7-0.10 call them as fields.
U.METHODS = vim.fn.has('nvim-0.11') == 1

function U.request(client, method, params, handler, bufnr)
  if U.METHODS then
    return client:request(method, params, handler, bufnr)
  end
  return client.request(method, params, handler, bufnr)
end

function U.is_stopped(client)
  if U.METHODS then
    return client:is_stopped()
  end
  return client.is_stopped()
end

return U
