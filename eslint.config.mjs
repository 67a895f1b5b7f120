// @ts-check
import tseslint from "typescript-eslint";

/**
 * The architecture as rules: src/core knows nothing of Node-RED, Redis or
 * PostgreSQL (adapters import the core, never the reverse); the Redis and
 * PostgreSQL adapters know nothing of Node-RED; the editor bundle takes only
 * pure code. Then typescript-eslint's recommended type-aware rules.
 */
const outsideCore = (message) => [
  { group: ["**/nodes/**", "**/redis/**", "**/postgres/**", "**/migrations/**", "**/service/**", "**/editor/**"], message },
];

const typed = ["src/**/*.ts", "bench/**/*.ts"];

export default tseslint.config(
  { ignores: ["dist/**", "resources/**", "node_modules/**", "ci/**", "nodes/**", "plugins/**", "scripts/**", "examples/**", "eslint.config.mjs"] },
  // the package and its bench: the recommended type-aware rules
  ...tseslint.configs.recommendedTypeChecked.map((config) => ({ ...config, files: typed })),
  // the tests: the recommended rules (the test helper and the node modules it loads are untyped JavaScript)
  ...tseslint.configs.recommended.map((config) => ({ ...config, files: ["test/**/*.ts"] })),
  {
    files: typed,
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      // unused names are tsc's job (noUnusedLocals and noUnusedParameters, with _ for a parameter kept for its place)
      "@typescript-eslint/no-unused-vars": "off",
      // an interface's async method answered at once (the memory store, the in-process registry) stays async: a throw in it
      // becomes a rejection, as the Redis one's would
      "@typescript-eslint/require-await": "off",
      // a Node-RED node's constructor names itself `node` for the handlers it registers, as the core nodes do
      "@typescript-eslint/no-this-alias": ["error", { allowedNames: ["node"] }],
      // a promise rejected with what a catch caught (unknown) passes the error on as it came
      "@typescript-eslint/prefer-promise-reject-errors": ["error", { allowThrowingUnknown: true }],
    },
  },
  {
    // the editor's browser code is typed by its own project (DOM, jQuery, no Node)
    files: ["src/editor/ui/**/*.ts", "src/editor/sidebar/ui/**/*.ts", "src/editor/sidebar/index.ts"],
    languageOptions: {
      parserOptions: { projectService: false, project: "./tsconfig.editor.json", tsconfigRootDir: import.meta.dirname },
    },
  },
  {
    files: ["test/**/*.ts"],
    rules: {
      "@typescript-eslint/no-unused-vars": "off",
      "@typescript-eslint/no-this-alias": ["error", { allowedNames: ["node", "store"] }],
    },
  },
  {
    files: ["src/core/**/*.ts"],
    rules: {
      "no-restricted-imports": ["error", {
        paths: [
          { name: "node-red", message: "src/core knows nothing of Node-RED: the nodes are its adapters" },
          { name: "ioredis", message: "src/core knows nothing of Redis: that is src/redis" },
          { name: "pg", message: "src/core knows nothing of PostgreSQL: that is src/postgres" },
          { name: "cluster-key-slot", message: "src/core knows nothing of Redis: that is src/redis" },
        ],
        patterns: outsideCore("src/core imports only src/core: adapters import the core, never the reverse"),
      }],
    },
  },
  {
    files: ["src/redis/**/*.ts", "src/postgres/**/*.ts", "src/migrations/**/*.ts"],
    rules: {
      "no-restricted-imports": ["error", {
        paths: [{ name: "node-red", message: "the store adapters know nothing of Node-RED" }],
        patterns: [{ group: ["**/nodes/**", "**/editor/**", "**/service/**"], message: "the store adapters import the core only" }],
      }],
    },
  },
  {
    files: ["src/editor/**/*.ts"],
    rules: {
      "no-restricted-imports": ["error", {
        paths: ["ioredis", "pg", "node-red"].map((name) => ({ name, message: "the editor bundle runs in the browser" })),
        patterns: [{ group: ["**/nodes/**", "**/redis/**", "**/postgres/**", "**/service/**", "**/migrations/**"], message: "the editor bundle takes pure code only" }],
      }],
    },
  },
);
