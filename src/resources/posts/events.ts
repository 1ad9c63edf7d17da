import type { PostChanged } from './post-service.ts'
import type { EventStore } from '../../store/store.ts'
import { renderPost } from './representation.ts'

/** The events a post's change raises. */
export const POST_EVENT_TYPES = ['post.created', 'post.updated', 'post.published', 'post.unpublished', 'post.deleted'] as const
export type PostEventType = typeof POST_EVENT_TYPES[number]

/**
 * Records the events of a post's change in the unit of work that made it: `data` is
 * the version-1 post after the change (`post.deleted`: `{id}`); the author and admins see them on the
 * stream, everyone when the post is published after the change (or was, for `post.deleted`).
 *
 * @example
 * new PostService(uow.posts, undefined, postEvents(uow.events)).update(id, principal, build)
 */
export function postEvents (events: Pick<EventStore, 'record'>): PostChanged {
  return (before, after) => {
    const post = after ?? before!
    const data = after === null ? { id: post.id } : renderPost(after, 1, '')
    const visible = after === null ? before?.status === 'published' : after.status === 'published'
    events.record(...postEventTypes(before?.status ?? null, after?.status ?? null).map(type => ({ type, data, owner: post.author, public: visible })))
  }
}

/**
 * The events of a post's change, from its status before (null: it is new) and after (null: it is
 * gone): created or updated or deleted, and published when it became `published`, unpublished
 * when a published post left that status (deleting a published post unpublishes nothing: it is
 * `post.deleted`).
 */
export function postEventTypes (before: string | null, after: string | null): PostEventType[] {
  if (after === null) return ['post.deleted']
  const types: PostEventType[] = [before === null ? 'post.created' : 'post.updated']
  if (after === 'published' && before !== 'published') types.push('post.published')
  if (before === 'published' && after !== 'published') types.push('post.unpublished')
  return types
}
