#!/usr/bin/env node
// The `tandem` command: run `npm run build` first (npm start and npm test do).
import('../dist/src/cli/main.js').catch((e) => {
  console.error(`tandem: cannot load the compiled CLI (${e.message}); run \`npm run build\` first`);
  process.exit(1);
});
