import fs from 'node:fs'
import path from 'node:path'

/** One command of an example, with what the example shows it answers. */
export interface DocCommand {
  text: string
  /** Line of the document where the command starts (1-based). */
  line: number
  /** Statuses the example shows (`# HTTP/1.1 201 Created`, `# 412 …`); empty: it shows none. */
  statuses: number[]
  /** ETag and Location values the example shows, by lower-case name. */
  shownHeaders: Record<string, string>
}

/** A fenced shell block with at least one curl command, and what its markers declare. */
export interface DocBlock {
  line: number
  lang: string
  /** Settings the instance needs for this block (`<!-- docs-test: env NAME=value … -->`). */
  env: Record<string, string>
  /** Why the block is not run (`<!-- docs-test: skip <reason> -->`). */
  skip?: string
  /** Commands run first, not shown to readers (`<!-- docs-test: setup … -->`). */
  setup: DocCommand[]
  commands: DocCommand[]
}

/** README.md and every docs/*.md, so that a new document is checked without a line added here. */
export function docFiles (root: string): string[] {
  const docs = fs.readdirSync(path.join(root, 'docs')).filter(f => f.endsWith('.md')).sort().map(f => `docs/${f}`)
  return ['README.md', ...docs]
}

const SHELLS = new Set(['sh', 'bash', 'shell', 'console'])
const PROVIDED = new Set(['B', 'KEY', 'TOKEN'])
const ASSIGNMENT = /^([A-Za-z_][A-Za-z0-9_]*)=("[^"]*"|'[^']*'|\S*)\s*/

/**
 * A line made only of assignments of what the runner provides ($B, $KEY, $TOKEN) or of
 * placeholders (`KEY=blog_…`): the reader fills those in, the runner has its own.
 */
function onlyProvided (line: string): boolean {
  let rest = line.trim()
  let any = false
  for (let m = ASSIGNMENT.exec(rest); m !== null && rest !== ''; m = ASSIGNMENT.exec(rest)) {
    if (!PROVIDED.has(m[1]!) && !m[2]!.includes('…')) return false
    any = true
    rest = rest.slice(m[0].length)
    if (rest.startsWith('#')) rest = ''
  }
  return any && rest === ''
}

/** Splits shell text into commands, each followed by the comment lines that show its answer. */
function commandsOf (lines: readonly string[], firstLine: number): DocCommand[] {
  const out: DocCommand[] = []
  let current: DocCommand | undefined
  let comments: string[] = []
  const finish = () => {
    if (current === undefined) {
      comments = []
      return
    }
    const shown = comments.join('\n')
    current.statuses = [...new Set([
      ...[...shown.matchAll(/HTTP\/\d(?:\.\d)? (\d{3})\b/g)].map(m => Number(m[1])),
      ...comments.map(c => /^\s*(\d{3})\b/.exec(c)?.[1]).filter(s => s !== undefined).map(Number),
    ])]
    for (const c of comments) {
      const h = /^\s*(etag|location)\s*:\s*(\S+)/i.exec(c)
      if (h !== null && !h[2]!.includes('…')) current.shownHeaders[h[1]!.toLowerCase()] ??= h[2]!
    }
    out.push(current)
    current = undefined
    comments = []
  }
  for (let i = 0; i < lines.length; i++) {
    const raw = lines[i]!
    const trimmed = raw.trim()
    if (trimmed === '') continue
    if (trimmed.startsWith('#')) {
      comments.push(trimmed.replace(/^#+/, ''))
      continue
    }
    finish()
    const start = i
    let text = raw
    // Continued lines stay as written (the backslash and the line break), as a shell reads them.
    while (text.trimEnd().endsWith('\\') && i + 1 < lines.length) text = `${text}\n${lines[++i]!}`
    if (onlyProvided(text)) continue
    current = { text, line: firstLine + start, statuses: [], shownHeaders: {} }
  }
  finish()
  return out
}

const MARKER = /<!--\s*docs-test:\s*(skip|env|setup)\b([\s\S]*?)-->/g

/**
 * The runnable blocks of a Markdown document: fenced `sh`/`bash` blocks with a curl command, each
 * with the markers (`<!-- docs-test: … -->`) written between it and the block before it.
 */
export function parseDoc (markdown: string): DocBlock[] {
  const lines = markdown.split('\n')
  const blocks: DocBlock[] = []
  let pending = ''
  let pendingLine = 0
  for (let i = 0; i < lines.length; i++) {
    const fence = /^(\s*)(`{3,}|~{3,})\s*([\w-]*)/.exec(lines[i]!)
    if (fence === null) {
      if (pending === '' && lines[i]!.includes('docs-test:')) pendingLine = i + 1
      pending += `${lines[i]!}\n`
      continue
    }
    const start = i
    const body: string[] = []
    for (i++; i < lines.length && !lines[i]!.trim().startsWith(fence[2]!); i++) body.push(lines[i]!)
    const lang = fence[3]!.toLowerCase()
    const markers = [...pending.matchAll(MARKER)]
    pending = ''
    const runnable = SHELLS.has(lang) && body.some(l => /(^|[\s|;&(])curl\s/.test(l))
    if (!runnable) {
      if (markers.length > 0) throw new Error(`the docs-test marker at line ${pendingLine} is not followed by a shell block with a curl command`)
      continue
    }
    const block: DocBlock = { line: start + 1, lang: lang || 'sh', env: {}, setup: [], commands: commandsOf(body, start + 2) }
    for (const [, kind, arg = ''] of markers) {
      if (kind === 'skip') {
        const reason = arg.trim()
        if (reason === '') throw new Error(`the docs-test skip before line ${start + 1} gives no reason`)
        block.skip = reason
      } else if (kind === 'env') {
        for (const pair of arg.trim().split(/\s+/).filter(Boolean)) {
          const eq = pair.indexOf('=')
          if (eq <= 0) throw new Error(`the docs-test env before line ${start + 1} has "${pair}", not NAME=value`)
          block.env[pair.slice(0, eq)] = pair.slice(eq + 1)
        }
      } else {
        block.setup.push(...commandsOf(arg.split('\n'), start + 1))
      }
    }
    blocks.push(block)
  }
  return blocks
}
