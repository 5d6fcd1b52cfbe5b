import { defineConfig } from "vite";
import preact from "@preact/preset-vite";

// Hashed files under /assets/ (served immutable by console-serve), no
// inline script (the Content-Security-Policy forbids it), no source maps
// in the build (the size budget counts what ships).
export default defineConfig({
  plugins: [preact({ prefreshEnabled: false, devToolsEnabled: false })],
  build: {
    outDir: "dist",
    assetsDir: "assets",
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
    sourcemap: false,
    target: "es2022",
  },
  server: { proxy: { "/api": "http://127.0.0.1:3000" } },
});
