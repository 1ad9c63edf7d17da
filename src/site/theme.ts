import { hash } from 'node:crypto'
import fs from 'node:fs'
import path from 'node:path'
import { Liquid } from 'liquidjs'
import { ConfigError } from '../config.ts'

/** The templates every theme has (its own or the default's). */
export const PAGE_TEMPLATES = ['layout', 'index', 'post', 'tag', 'author', 'search', 'error'] as const
export type PageTemplate = Exclude<typeof PAGE_TEMPLATES[number], 'layout'>

/** One of the theme's files under `assets/`, served under a name with its content's hash. */
export interface Asset {
  readonly name: string
  readonly body: Buffer
  readonly type: string
  readonly etag: string
}

const TYPES: Readonly<Record<string, string>> = {
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.webp': 'image/webp',
  '.avif': 'image/avif',
  '.gif': 'image/gif',
  '.ico': 'image/x-icon',
  '.woff2': 'font/woff2',
  '.woff': 'font/woff',
  '.txt': 'text/plain; charset=utf-8',
}

/**
 * Limits on what a template may cost, whoever wrote it: its size when parsed, the time one page
 * takes to render, and the memory its loops and strings may take (liquidjs counts both).
 */
const PARSE_LIMIT = 1_000_000
const RENDER_LIMIT_MS = 2_000
const MEMORY_LIMIT = 20_000_000

/** The default theme: beside this module in the sources, copied beside the bundle by the build. */
export function defaultThemeDir (): string {
  const here = import.meta.dirname
  for (const dir of [path.join(here, 'theme'), path.join(here, 'site', 'theme')]) {
    if (fs.existsSync(path.join(dir, 'layout.liquid'))) return dir
  }
  throw new Error(`the default theme is missing (looked in ${here})`)
}

/** Every file of `dir`, by its path relative to it (with `/`); symbolic links are not followed. */
function filesOf (dir: string, prefix = ''): Map<string, string> {
  const out = new Map<string, string>()
  for (const e of fs.readdirSync(path.join(dir, prefix), { withFileTypes: true })) {
    const rel = prefix === '' ? e.name : `${prefix}/${e.name}`
    if (e.isDirectory()) for (const [k, v] of filesOf(dir, rel)) out.set(k, v)
    else if (e.isFile()) out.set(rel, path.join(dir, rel))
  }
  return out
}

/** `style.css` → `style.3f9a1c2b.css`. */
function hashedName (name: string, body: Buffer): string {
  const ext = path.extname(name)
  return `${name.slice(0, name.length - ext.length)}.${hash('sha256', body, 'hex').slice(0, 12)}${ext}`
}

/** A liquidjs error's reason without the position liquidjs appends to it. */
function reasonOf (err: unknown): string {
  return (err instanceof Error ? err.message : String(err)).replace(/, file:.*$/s, '').split('\n')[0] ?? 'unknown error'
}

/** The line a liquidjs error points at, when it says. */
export function lineOf (err: unknown): number | null {
  const m = /line:(\d+)/.exec(err instanceof Error ? err.message : '')
  return m === null ? null : Number(m[1])
}

/** Where a render went wrong: the template and line liquidjs names, and why. */
export function renderFailure (err: unknown): { template: string | null, line: number | null, reason: string } {
  const m = /file:([^,]+)/.exec(err instanceof Error ? err.message : '')
  return { template: m?.[1] ?? null, line: lineOf(err), reason: reasonOf(err) }
}

/**
 * A theme: the default's files with those of `SITE_THEME_DIR` over them, file by file. Templates
 * are Liquid, read once at start and parsed then (a theme that does not parse stops the start),
 * rendered from memory: a template reaches no file but the theme's own, no object but those the
 * page hands it (own properties only), no filter that is not known (an unknown one is an error),
 * and within the limits above.
 */
export class Theme {
  private readonly liquid: Liquid
  private readonly assets = new Map<string, Asset>()
  private readonly assetNames = new Map<string, string>()
  /** Changes with any file of the theme: part of every page's ETag. */
  readonly digest: string

  constructor (overrideDir: string | null) {
    const files = filesOf(defaultThemeDir())
    if (overrideDir !== null) {
      if (!fs.existsSync(overrideDir) || !fs.statSync(overrideDir).isDirectory()) throw new ConfigError('SITE_THEME_DIR', `${overrideDir} is not a folder`)
      for (const [k, v] of filesOf(overrideDir)) files.set(k, v)
    }
    const templates: Record<string, string> = {}
    const digest: string[] = []
    for (const [rel, file] of [...files].sort(([a], [b]) => a < b ? -1 : 1)) {
      const body = fs.readFileSync(file)
      digest.push(rel, hash('sha256', body, 'hex'))
      if (rel.startsWith('assets/')) {
        const name = rel.slice('assets/'.length)
        const served = hashedName(name, body)
        this.assetNames.set(name, served)
        this.assets.set(served, { name: served, body, type: TYPES[path.extname(name).toLowerCase()] ?? 'application/octet-stream', etag: `"${hash('sha256', body, 'base64url').slice(0, 27)}"` })
      } else if (rel.endsWith('.liquid')) {
        templates[rel] = body.toString('utf8')
      }
    }
    this.digest = hash('sha256', digest.join('\n'), 'base64url').slice(0, 16)
    for (const name of PAGE_TEMPLATES) {
      if (templates[`${name}.liquid`] === undefined) throw new ConfigError('SITE_THEME_DIR', `${name}.liquid: missing`)
    }
    this.liquid = new Liquid({
      templates,
      extname: '.liquid',
      strictFilters: true,
      ownPropertyOnly: true,
      outputEscape: 'escape',
      parseLimit: PARSE_LIMIT,
      renderLimit: RENDER_LIMIT_MS,
      memoryLimit: MEMORY_LIMIT,
      timezoneOffset: 0,
      cache: true,
    })
    this.liquid.registerFilter('asset_url', (name: unknown) => {
      const served = this.assetNames.get(String(name))
      if (served === undefined) throw new Error(`no asset ${String(name)} in the theme`)
      return `/assets/${served}`
    })
    for (const [rel, text] of Object.entries(templates)) {
      try {
        this.liquid.parse(text, rel)
      } catch (err) {
        const line = lineOf(err)
        throw new ConfigError('SITE_THEME_DIR', `${rel}${line === null ? '' : `:${line}`}: ${reasonOf(err)}`)
      }
    }
  }

  /** The page `template` with `data` (its objects), in the layout the template names. */
  async render (template: PageTemplate, data: Record<string, unknown>): Promise<string> {
    return await this.liquid.renderFile(template, data) as string
  }

  asset (name: string): Asset | undefined {
    return this.assets.get(name)
  }

  /** The served path of an asset by its own name (`favicon.ico`), if the theme has it. */
  assetPath (name: string): string | null {
    const served = this.assetNames.get(name)
    return served === undefined ? null : `/assets/${served}`
  }
}
