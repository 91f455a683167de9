import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

// The developer portal: Preact + hand-drawn SVG charts, built into dist/portal and served by the
// api role at / (src/portal). `npm run build` runs this after tsc. The portal imports one module from
// outside portal/: src/platform/money.ts (pure TypeScript, no Node APIs); the build bundles it, and the dev
// server may serve it because the repository root, with package.json, is its workspace root.
const root = fileURLToPath(new URL('.', import.meta.url));

export default defineConfig({
  root,
  base: '/',
  publicDir: 'public',
  logLevel: 'warn',
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  resolve: { alias: { react: 'preact/compat', 'react-dom': 'preact/compat' } },
  build: {
    outDir: fileURLToPath(new URL('../dist/portal', import.meta.url)),
    emptyOutDir: true,
    target: 'es2022',
    // No inline script: the strict Content-Security-Policy allows scripts from our origin only.
    modulePreload: { polyfill: false },
    assetsInlineLimit: 0,
    sourcemap: false,
    reportCompressedSize: false,
  },
  server: { proxy: { '/v1': 'http://127.0.0.1:8080', '/external': 'http://127.0.0.1:8080', '/portal': 'http://127.0.0.1:8080' } },
});
