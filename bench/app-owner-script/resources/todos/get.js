// The owner rule of bench/app-owner-rule, as a Deployd app writes it.
if (!me || this.owner !== me.id) cancel('not found', 404);
