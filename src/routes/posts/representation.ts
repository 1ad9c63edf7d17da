import type { Post, PostSummary } from '../../domain/post.ts'
import type { Revision, RevisionSummary } from '../../domain/revision.ts'
import type { ApiVersion } from '../../http/versioning.ts'

function common (post: PostSummary & { content?: string }) {
  return {
    title: post.title,
    content: post.content,
    status: post.status,
    publish_at: post.publishAt,
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

/** A post's members by field name (what a list item's `fields` choose from). */
export function postData (post: PostSummary & { content?: string }, version: ApiVersion): Record<string, unknown> {
  return { [version === 1 ? 'id' : 'postId']: post.id, ...common(post) }
}

/** A revision's members by field name: the whole revision, or a list item's choice of them. */
export function revisionData (r: RevisionSummary & { content?: string }): Record<string, unknown> {
  return { number: r.number, title: r.title, content: r.content, status: r.status, publish_at: r.publishAt, editor: r.editor, created_at: r.createdAt }
}

export function renderRevision (r: Revision) {
  return revisionData(r)
}
