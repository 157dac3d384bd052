import { defineConfig } from 'vite'

// The console is served by memstream under /console/ and embedded from
// ../console/dist (go:embed), so the build must be reproducible: the
// browser suite rebuilds it and compares byte for byte.
export default defineConfig({
  base: '/console/',
  build: {
    outDir: '../console/dist',
    emptyOutDir: true,
    sourcemap: false,
    assetsInlineLimit: 0,
    chunkSizeWarningLimit: 1000,
    // On two loaded cores every build would warn that plugins are slow.
    rolldownOptions: { checks: { pluginTimings: false } },
  },
})
