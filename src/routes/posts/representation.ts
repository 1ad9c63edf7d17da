import type { Post, PostSummary } from '../../domain/post.ts'
import type { ApiVersion } from '../../http/versioning.ts'

function common (post: PostSummary & { content?: string }) {
  return {
    title: post.title,
    content: post.content,
    status: post.status,
    created_at: post.createdAt,
    updated_at: post.updatedAt,
    author: post.author,
  }
}

/** The single-post representation of each version (contract §1, §8). */
export function renderPost (post: Post, version: ApiVersion, base: string) {
  if (version === 1) return { id: post.id, ...common(post) }
  const self = `${base}/posts/${post.id}`
  return {
    postId: post.id,
    ...common(post),
    _links: { self: { href: self }, update: { href: self, method: 'PUT' }, delete: { href: self, method: 'DELETE' } },
  }
}

/**
 * A list item: `{id, title}` (v1) or `{postId, title, _links.self}` (v2), or exactly `fields`
 * (the store reads the content only when `fields` names it).
 */
export function renderListItem (post: PostSummary & { content?: string }, version: ApiVersion, base: string, fields: readonly string[] | null) {
  const full: Record<string, unknown> = { [version === 1 ? 'id' : 'postId']: post.id, ...common(post) }
  const names = fields ?? [version === 1 ? 'id' : 'postId', 'title']
  const item: Record<string, unknown> = {}
  for (const name of names) item[name] = full[name]
  if (version === 2) item._links = { self: { href: `${base}/posts/${post.id}` } }
  return item
}
