// Only root or the user themself may change a user (svc create writes this guard; edit it as
// your app needs). Without it anyone could change any user's profile: Deployd's open default.
cancelUnless(isRoot || isMe(this.id), 'you may only change your own user', 403);
