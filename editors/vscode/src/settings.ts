// Written by `copyedit settings write` from copyedit_lsp/serve/config.py: do not edit by hand.

/** The server's settings (camelCase keys of copyedit_lsp.serve.config.Settings). */
export interface ServerSettings {
  model?: string;
  mode?: string;
  selector?: string;
  applySelector?: string;
  splice?: string;
  copyCheck?: number;
  fallback?: boolean;
  review?: string;
  syntaxGuard?: boolean;
  nCtx?: number;
  nThreads?: number | null;
  nGpuLayers?: number;
  batchInvariant?: boolean;
  maxNewTokens?: number;
  maxFileBytes?: number;
  backend?: string;
  remoteUrl?: string;
  remoteModel?: string;
  remoteEngine?: string;
  remoteTimeout?: number;
  remoteGensPerRequest?: boolean;
}

/** A server setting as VS Code holds it under `copyedit.`. */
export interface Setting {
  name: keyof ServerSettings;
  key: string;
  type: "string" | "boolean" | "integer" | "number";
  choices?: readonly string[];
  empty?: boolean; // an empty string is a value, not unset
  minimum?: number;
  exclusiveMinimum?: number;
  exclusiveMaximum?: number;
  pattern?: string;
  was?: string; // its VS Code key before a rename, still read
}

export const SETTINGS: readonly Setting[] = [
  { name: "model", key: "model", type: "string" },
  { name: "mode", key: "mode", type: "string", choices: ["program", "rewrite", "lookup"] },
  { name: "selector", key: "selector", type: "string", was: "adapter" },
  { name: "applySelector", key: "applySelector", type: "string" },
  { name: "splice", key: "splice", type: "string", choices: ["prefill", "none"] },
  { name: "copyCheck", key: "copyCheck", type: "number", minimum: 0, exclusiveMaximum: 1 },
  { name: "fallback", key: "fallback", type: "boolean" },
  { name: "review", key: "review", type: "string", choices: ["always", "workspace", "never"] },
  { name: "syntaxGuard", key: "syntaxGuard", type: "boolean" },
  { name: "nCtx", key: "nCtx", type: "integer", minimum: 0 },
  { name: "nThreads", key: "threads", type: "integer", minimum: 1 },
  { name: "nGpuLayers", key: "gpuLayers", type: "integer", minimum: -1 },
  { name: "batchInvariant", key: "batchInvariant", type: "boolean" },
  { name: "maxNewTokens", key: "maxNewTokens", type: "integer", minimum: 1 },
  { name: "maxFileBytes", key: "maxFileBytes", type: "integer", minimum: 1 },
  { name: "backend", key: "backend", type: "string", choices: ["local", "remote"] },
  { name: "remoteUrl", key: "remote.url", type: "string", pattern: "^https?://" },
  { name: "remoteModel", key: "remote.model", type: "string", empty: true },
  { name: "remoteEngine", key: "remote.engine", type: "string", choices: ["llama.cpp", "vllm"] },
  { name: "remoteTimeout", key: "remote.timeout", type: "number", exclusiveMinimum: 0 },
  { name: "remoteGensPerRequest", key: "remote.gensPerRequest", type: "boolean" },
];
