// Bundles the live cards' ES modules (jupyter_agent/ui/static/cards.js and every ./x.js it
// imports) into the one self-contained module the kernel sends to the front end
// (jupyter_agent/ui/shared.py). anywidget imports that module from a blob URL, where relative
// imports cannot resolve, hence one file.
//
// The bundle is committed, so an editable install without Node has working cards;
// tests/test_cards_bundle.py rebuilds it and fails when the committed file is stale
// (docs/architecture.md, "The cards' JavaScript").
//
//   node build-cards.mjs                     write jupyter_agent/ui/static/bundle/cards.js
//   node build-cards.mjs --outfile FILE      write FILE instead (the freshness test)
//   node build-cards.mjs --entry FILE        bundle FILE instead of cards.js (the same test)
import { build } from "esbuild";
import { fileURLToPath } from "node:url";

const here = (path) => fileURLToPath(new URL(path, import.meta.url));
const options = {
  "--entry": here("../jupyter_agent/ui/static/cards.js"),
  "--outfile": here("../jupyter_agent/ui/static/bundle/cards.js"),
};
const args = process.argv.slice(2);
for (let i = 0; i < args.length; i += 2) {
  if (!(args[i] in options) || args[i + 1] === undefined) {
    console.error(`build-cards: usage: node build-cards.mjs [--entry FILE] [--outfile FILE]`);
    process.exit(2);
  }
  options[args[i]] = args[i + 1];
}

await build({
  entryPoints: [options["--entry"]],
  outfile: options["--outfile"],
  bundle: true,
  format: "esm",
  // Minified: the module rides in every saved notebook once (gzipped 17.7 KB instead of
  // 23.4 KB). The sources stay readable in jupyter_agent/ui/static/.
  minify: true,
  // Same bytes from the same sources anywhere: no paths, no dates, no source map.
  legalComments: "none",
  charset: "ascii",
  logLevel: "warning",
});
