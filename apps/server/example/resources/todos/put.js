// On Put: tell every open page about the changed todo.
emit('todos:update', this);
