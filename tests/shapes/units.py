def kilometers_to_miles(distance):
    return distance * 0.621371
