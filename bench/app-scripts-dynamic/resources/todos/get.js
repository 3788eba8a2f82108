this.seen = String(this.title).length > 0;
