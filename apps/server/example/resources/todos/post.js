// On Post: tell every open page about the new todo.
emit('todos:create', this);
