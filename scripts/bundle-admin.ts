/**
 * A step of `npm run build`: bundles the editor (web/admin/, a browser program) into
 * `dist/admin/assets/<name>-<hash>.<ext>` and writes `dist/admin/index.html` naming them. The
 * service serves them at /admin (src/routes/admin/admin-routes.ts): the hash in each name lets
 * browsers keep a file for a year, the page is revalidated on every use.
 *
 * Minified (a browser downloads it), with linked source maps for the browser's developer tools.
 * Split: what only some screens need (Profile, Staff, Site: QR codes, passkey registration) is in chunks
 * the page loads when one of them opens, so the list and the editor do not wait for them.
 */
import fs from 'node:fs'
import path from 'node:path'
import { build } from 'esbuild'
import { MARK_SVG, SERVICE_NAME } from '../src/routes/system/brand.ts'

const ROOT = path.resolve(import.meta.dirname, '..')
const SOURCE = path.join(ROOT, 'web/admin')
const OUT = path.join(ROOT, 'dist/admin')
const ASSETS = path.join(OUT, 'assets')

fs.rmSync(OUT, { recursive: true, force: true })
const result = await build({
  entryPoints: { editor: path.join(SOURCE, 'main.ts') },
  outdir: ASSETS,
  entryNames: '[name]-[hash]',
  assetNames: '[name]-[hash]',
  chunkNames: 'chunk-[hash]',
  bundle: true,
  splitting: true,
  minify: true,
  format: 'esm',
  platform: 'browser',
  target: ['chrome111', 'firefox111', 'safari16.4'],
  loader: { '.svg': 'file' },
  metafile: true,
  sourcemap: 'linked',
  legalComments: 'linked',
  logLevel: 'warning',
})

const outputs = Object.keys(result.metafile.outputs).map(f => path.basename(f))
const script = outputs.find(f => /^editor-.*\.js$/.test(f))
const style = outputs.find(f => /^editor-.*\.css$/.test(f))
if (script === undefined || style === undefined) throw new Error(`the editor's bundle lacks its script or style sheet: ${outputs.join(', ')}`)

// Which files only a lazily opened screen loads (its module and what only it imports), for the
// weight test: the list and the editor must not load them.
const lazy = Object.entries(result.metafile.outputs)
  .filter(([file, out]) => file.endsWith('.js') && out.entryPoint !== undefined && /web\/admin\/(profile|staff|site)\.ts$/.test(out.entryPoint))
  .map(([file, out]) => ({ file: path.basename(file), screen: path.basename(out.entryPoint!, '.ts') }))
fs.writeFileSync(path.join(OUT, 'manifest.json'), `${JSON.stringify({ script, style, lazy }, null, 2)}\n`)

// The service's mark and name are those of /docs; the mark is inlined, so the first paint needs no further request.
const template = fs.readFileSync(path.join(SOURCE, 'index.html'), 'utf8')
const page = template
  .replaceAll('{{script}}', `/admin/assets/${script}`)
  .replaceAll('{{style}}', `/admin/assets/${style}`)
  .replaceAll('{{mark}}', MARK_SVG)
  .replaceAll('{{name}}', SERVICE_NAME)
  .replaceAll('{{icon}}', `data:image/svg+xml,${encodeURIComponent(MARK_SVG)}`)
fs.writeFileSync(path.join(OUT, 'index.html'), page)
