// Writes NAME.gz and NAME.br beside every text file of the build, which
// console-serve answers with when the browser accepts them.
import { readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { brotliCompressSync, gzipSync, constants } from "node:zlib";

function* files(dir) {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) yield* files(path);
    else yield path;
  }
}
for (const path of [...files("dist")]) {
  if (!/\.(js|css|html|svg|json)$/.test(path)) continue;
  const bytes = readFileSync(path);
  writeFileSync(path + ".gz", gzipSync(bytes, { level: 9 }));
  writeFileSync(path + ".br", brotliCompressSync(bytes, { params: { [constants.BROTLI_PARAM_QUALITY]: 11 } }));
}
