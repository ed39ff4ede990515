// Reads the tool's settings from defaults, a config file and command-line flags.
const DEFAULTS = {
  port: 8080,
  host: 'localhost',
  logging: { level: 'info', file: null },
};

/**
 * Turns command-line flags into a partial config.
 * @param {string[]} flags - flags of the form --name=value; dots nest (--logging.level=debug)
 * @returns {object} the settings the flags name
 */
function flagsToConfig(flags) {
  const config = {};
  for (const flag of flags) {
    const [path, value] = flag.replace(/^--/, '').split('=');
    const keys = path.split('.');
    let node = config;
    for (const key of keys.slice(0, -1)) {
      node = node[key] = node[key] || {};
    }
    node[keys[keys.length - 1]] = value;
  }
  return config;
}

function mergeDeep(target, source) {
  for (const [key, value] of Object.entries(source)) {
    if (isPlainObject(value) && isPlainObject(target[key])) {
      target[key] = mergeDeep({ ...target[key] }, value);
    } else {
      target[key] = value;
    }
  }
  return target;
}

function isPlainObject(value) {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

function resolveConfig(fileConfig, flags) {
  const merged = mergeDeep(mergeDeep({}, DEFAULTS), fileConfig);
  return mergeDeep(merged, flagsToConfig(flags));
}

module.exports = { resolveConfig, flagsToConfig };
