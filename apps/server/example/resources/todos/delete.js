// On Delete: tell every open page which todo is gone.
emit('todos:delete', { id: this.id });
