// Only root or the user themself may delete a user (svc create writes this guard; edit it as
// your app needs). Without it anyone, even a visitor who is not logged in, could delete any user.
cancelUnless(isRoot || isMe(this.id), 'you may only delete your own user', 403);
