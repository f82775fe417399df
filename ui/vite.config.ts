import { defineConfig } from "vite";

// The UI is served by every agent at /ui/ from the assets embedded in the
// binary (ui/dist, see ui.go). `npm run dev` proxies the API to a local
// `caravan agent -dev` for working on it.
export default defineConfig({
  base: "/ui/",
  oxc: { jsx: { runtime: "automatic", importSource: "preact" } },
  build: {
    outDir: "dist",
    emptyOutDir: true,
    // One small bundle: reproducible file names, no source maps to embed.
    sourcemap: false,
    chunkSizeWarningLimit: 200,
  },
  server: {
    proxy: { "/v1": process.env.CARAVAN_ADDR ?? "http://127.0.0.1:4680" },
  },
});
