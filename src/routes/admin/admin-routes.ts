import fs from 'node:fs'
import path from 'node:path'
import { Type } from '@sinclair/typebox'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { AppError } from '../../errors.ts'
import { isNotModified, strongEtag } from '../../http/toolkit/conditional.ts'
import { problemResponses, SYSTEM_ERRORS } from '../../http/contract/schemas.ts'

/** Where the build puts the editor (scripts/bundle-admin.ts): `index.html` and `assets/<name>-<hash>.<ext>`. */
export const ADMIN_BUILD_DIR = path.join('dist', 'admin')

/** Asset names carry their content's hash, so a name never changes meaning: caches keep them for a year. */
export const IMMUTABLE = 'public, max-age=31536000, immutable'
/** The page names the current assets, so every use asks whether it is still current (304 when it is). */
export const REVALIDATE = 'no-cache'

const TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.map': 'application/json; charset=utf-8',
}

interface File { readonly body: Buffer, readonly type: string, readonly etag: string }

export interface AdminBuild {
  readonly page: File
  readonly assets: ReadonlyMap<string, File>
}

/** The service's folder: the nearest one above this module holding package.json (from src/ and from dist/ alike). */
function packageRoot (from: string): string {
  let dir = from
  while (!fs.existsSync(path.join(dir, 'package.json'))) {
    const up = path.dirname(dir)
    if (up === dir) return from
    dir = up
  }
  return dir
}

function fileOf (file: string): File {
  const body = fs.readFileSync(file)
  return { body, type: TYPES[path.extname(file)] ?? 'application/octet-stream', etag: strongEtag(body.toString('base64')) }
}

/** The built editor read into memory once (a few hundred KiB), or null when the build has not made it. */
export function loadAdminBuild (dir = path.join(packageRoot(import.meta.dirname), ADMIN_BUILD_DIR)): AdminBuild | null {
  const index = path.join(dir, 'index.html')
  if (!fs.existsSync(index)) return null
  const assetsDir = path.join(dir, 'assets')
  const assets = new Map<string, File>()
  for (const name of fs.existsSync(assetsDir) ? fs.readdirSync(assetsDir) : []) assets.set(name, fileOf(path.join(assetsDir, name)))
  const page = fileOf(index)
  return { page: { ...page, type: 'text/html; charset=utf-8' }, assets }
}

const NOT_BUILT = 'The editor is not built on this instance: `npm run build` makes it.'

/**
 * `GET /admin`: the editor, one page and its content-hashed assets, all from this service. The
 * page is revalidated on every use; the assets are immutable. Its Content-Security-Policy (no inline
 * script or style, nothing from another origin) is set with the other security headers
 * (src/http/pipeline/security.ts).
 */
export async function adminRoutes (app: FastifyInstance, opts: { build?: AdminBuild | null } = {}): Promise<void> {
  const build = opts.build === undefined ? loadAdminBuild() : opts.build
  const send = (req: FastifyRequest, reply: FastifyReply, file: File, cacheControl: string): FastifyReply => {
    reply.header('etag', file.etag).header('cache-control', cacheControl)
    if (isNotModified(req, file)) return reply.code(304).send()
    return reply.code(200).header('content-type', file.type).send(file.body)
  }

  // The page, at its own address and at those of the links the service makes: the set-up link
  // (printed at start while the blog has no owner), an invitation's, a password reset's.
  const pages = [
    ['/admin', 'The editor in the browser', 'An HTML page: sign in with an API key or a JWT, then list, write, illustrate, schedule and review the blog\'s writing through this API.'],
    ['/admin/setup', 'The owner\'s set-up in the browser', 'The editor\'s page at the link the service prints while the blog has no owner (`/admin/setup#<token>`): the owner\'s name, email and password make the account (`POST /setup`).'],
    ['/admin/invite', 'An invitation, accepted in the browser', 'The editor\'s page at an invitation\'s link (`/admin/invite#<token>`): a name and a password accept it (`POST /invitations/accept`).'],
    ['/admin/reset', 'A password reset in the browser', 'The editor\'s page at a reset link (`/admin/reset#<token>`): a new password is set (`POST /password-resets`).'],
  ] as const
  for (const [path, summary, description] of pages) {
    app.get(path, {
      schema: {
        tags: ['operations'],
        summary,
        description: `${description} Revalidated on every use (\`Cache-Control: no-cache\`, ETag, 304).`,
        produces: ['text/html'],
        response: {
          200: Type.String({ description: 'The editor\'s page.' }),
          304: Type.Null({ description: 'Not modified.' }),
          ...problemResponses(404, ...SYSTEM_ERRORS),
        },
      },
    }, async (req, reply) => {
      if (build === null) throw new AppError('NOT_FOUND', NOT_BUILT)
      return send(req, reply, build.page, REVALIDATE)
    })
  }

  app.get<{ Params: { file: string } }>('/admin/assets/:file', {
    schema: {
      tags: ['operations'],
      summary: 'One of the editor\'s scripts, style sheets or images',
      description: 'Named by its content\'s hash: `Cache-Control: public, max-age=31536000, immutable`.',
      params: Type.Object({ file: Type.String({ pattern: '^[A-Za-z0-9_.-]+$', maxLength: 128 }) }),
      produces: ['text/javascript', 'text/css', 'image/svg+xml'],
      response: {
        200: Type.String({ description: 'The file.' }),
        304: Type.Null({ description: 'Not modified.' }),
        ...problemResponses(404, 422, ...SYSTEM_ERRORS),
      },
    },
  }, async (req, reply) => {
    const file = build?.assets.get(req.params.file)
    if (file === undefined) throw new AppError('NOT_FOUND', build === null ? NOT_BUILT : `The editor has no asset ${req.params.file}.`)
    return send(req, reply, file, IMMUTABLE)
  })
}
