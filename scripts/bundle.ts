/**
 * The last step of `npm run build`: bundles the compiled entry point (`dist/cli/main.js`, from
 * `tsc`) and the packages it imports into one ES module, `dist/blog.js`, which `npm start` and
 * `bin/blog.js` run.
 *
 * Why: loading ~1 000 module files (Kysely alone is ~260, TypeBox ~200) was most of start-up;
 * resolving, opening, reading and compiling them one by one took 0.7 s of a 1.0–1.4 s start on
 * the benchmark machine. One file starts in about half the time (docs/performance.md, Start-up).
 * It then copies the default theme of the reading site beside it (`dist/site/theme/`).
 * Nothing is minified or renamed: stack traces keep the functions' names, and
 * `dist/blog.js.map` maps them back to the sources (`node --enable-source-maps`).
 *
 * Left as ordinary imports from node_modules:
 * - better-sqlite3: a native addon, found by path at run time;
 * - sharp: libvips, a native addon with its prebuilt binary in a platform package (@img/sharp-*);
 * - @aws-sdk/client-s3, @aws-sdk/lib-storage: large, and loaded only when blobs are kept in S3;
 * - pg, ioredis: imported only when DATABASE_URL or REDIS_URL names them;
 * - pino: its worker-thread transports are files it loads by path (the service writes to
 *   stdout, but a bundle must not break a transport set by the operator);
 * - @fastify/swagger, @fastify/swagger-ui: read their own package files and serve /docs's
 *   assets from their folder.
 */
import fs from 'node:fs'
import path from 'node:path'
import { build } from 'esbuild'

const ROOT = path.resolve(import.meta.dirname, '..')

const EXTERNAL = ['better-sqlite3', 'sharp', '@node-rs/argon2', '@aws-sdk/client-s3', '@aws-sdk/lib-storage', 'pg', 'ioredis', 'pino', '@fastify/swagger', '@fastify/swagger-ui']

await build({
  entryPoints: [path.join(ROOT, 'dist/cli/main.js')],
  outfile: path.join(ROOT, 'dist/blog.js'),
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  external: EXTERNAL,
  // The CommonJS packages in the bundle call require() for Node's modules and the externals;
  // an ES module has none of its own.
  banner: { js: "import { createRequire as __createRequire } from 'node:module';\nconst require = __createRequire(import.meta.url);" },
  sourcemap: 'linked',
  sourcesContent: false,
  legalComments: 'linked',
  logLevel: 'warning',
})

// V8 keeps a script's source in memory (for lazy compilation), at one byte a character only when
// every character is Latin-1. esbuild writes strings and identifiers in ASCII, but leaves the
// comments it keeps and the insides of regular expressions as they are: a few dozen characters
// (`—`, `…`) made V8 hold the whole 5 MB source at two bytes a character, 5 MiB more heap. Each is
// written as its `\uXXXX` escape (one per UTF-16 unit), which means the same in a regular expression
// and changes nothing in a comment.
// (After a backslash the escape would be read as a backslash and four letters: none is, and a new one fails the build.)
const bundle = path.join(ROOT, 'dist/blog.js')
const source = fs.readFileSync(bundle, 'utf8')
if (/\\[\u0080-\uffff]/.test(source)) throw new Error('dist/blog.js has a character beyond ASCII after a backslash: write it as an escape in its source')
fs.writeFileSync(bundle, source.replace(/[\u0080-\uffff]/g, c => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`))

// The default theme is data the site reads at start (src/site/theme.ts looks beside the bundle).
fs.cpSync(path.join(ROOT, 'src/site/theme'), path.join(ROOT, 'dist/site/theme'), { recursive: true })
